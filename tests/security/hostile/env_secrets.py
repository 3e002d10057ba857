# expect: contained
# Dumps the whole environment, hoping the caller's cloud credentials leaked in.
import os

for k, v in sorted(os.environ.items()):
    print(f"{k}={v}")
for k in ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "OPENAI_API_KEY", "GITHUB_TOKEN"):
    if k in os.environ:
        print("ESCAPED: the environment holds", k)
