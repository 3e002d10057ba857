# expect: errno ENOENT
# Reads the password hashes and the other credential files of /etc.
import errno

for path in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_rsa_key",
             "/etc/ssh/ssh_host_ed25519_key", "/etc/machine-id", "/etc/security/opasswd"]:
    try:
        data = open(path).read()
        print(path, "READ", data[:300])
        if path == "/etc/shadow" and "root:" in data:
            print("ESCAPED: /etc/shadow readable")
    except OSError as e:
        print(path, errno.errorcode[e.errno])
print(open("/etc/passwd").read())
