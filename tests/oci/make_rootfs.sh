#!/bin/sh
# Builds a small container rootfs from the host's own files: python3 with its
# standard library, a shell and the coreutils the OCI tests use, their shared
# libraries, and an /etc with users root, sandbox (1000) and nobody.
# usage: make_rootfs.sh DIR   (does nothing if DIR/.complete exists)
set -eu
dir=$1
[ -e "$dir/.complete" ] && exit 0
rm -rf "$dir"
mkdir -p "$dir/usr/bin" "$dir/usr/lib" "$dir/etc" "$dir/tmp" "$dir/root" "$dir/home/sandbox" \
  "$dir/var/tmp" "$dir/run" "$dir/proc" "$dir/dev" "$dir/sys"
chmod 1777 "$dir/tmp" "$dir/var/tmp"
ln -s usr/bin "$dir/bin"
ln -s usr/bin "$dir/sbin"
ln -s usr/lib "$dir/lib"
[ -d /usr/lib64 ] && mkdir -p "$dir/usr/lib64" && ln -s usr/lib64 "$dir/lib64"
py=$(readlink -f /usr/bin/python3)
bins="$py dash bash cat echo ls id env sleep pwd hostname true false head tail wc mkdir rm touch
  stat sh grep sed tr uname whoami printf test expr"
for b in $bins; do
  case "$b" in /*) p=$b ;; *) p=/usr/bin/$b ;; esac
  [ -f "$p" ] || p=/usr/sbin/$b
  [ -f "$p" ] || continue
  cp -L "$p" "$dir/usr/bin/$(basename "$p")"
  ldd "$p" 2>/dev/null | awk '/=>/ {print $3} /^\t\/lib/ {print $1}' | while read -r lib; do
    [ -f "$lib" ] || continue
    real=$(readlink -f "$lib")
    # The library at the path the loader asks for (under /usr: merged usr).
    case "$lib" in /usr/*) dst=$lib ;; *) dst=/usr$lib ;; esac
    mkdir -p "$dir$(dirname "$dst")"
    [ -e "$dir$dst" ] || cp "$real" "$dir$dst"
  done
done
ln -sf "$(basename "$py")" "$dir/usr/bin/python3"
[ -e "$dir/usr/bin/sh" ] || ln -s dash "$dir/usr/bin/sh"
ver=$(basename "$py")
cp -a "/usr/lib/$ver" "$dir/usr/lib/$ver"
rm -rf "$dir/usr/lib/$ver/test" "$dir/usr/lib/$ver/__pycache__"
cat > "$dir/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PW
printf 'root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n' > "$dir/etc/group"
chown 1000:1000 "$dir/home/sandbox"
touch "$dir/.complete"
