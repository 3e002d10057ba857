# expect: contained
# wget to an outside address and to the cloud metadata service.
wget -q -T 20 -t 1 -O - http://1.1.1.1/; echo "wget ip: $?"
wget -q -T 20 -t 1 -O - http://169.254.169.254/computeMetadata/v1/; echo "wget metadata: $?"
