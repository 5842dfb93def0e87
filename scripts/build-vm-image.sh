#!/usr/bin/env bash
# Builds the VM nodes' images that acceptance/vmnode boots (shared recipe: Debian/OSTree
# nodes under QEMU), from Debian's packages, into bin/vm-<hash>/ (bin/vm links to it):
#   node.img     a raw ext4 disk holding an OSTree sysroot: stateroot "debian", commit
#                mcp/v1 deployed (kargs root=/dev/vda rw console=ttyS0 panic=1), remote
#                "vm" = file:///run/updates/repo (the harness's read-only 9p share)
#   updates/repo an archive repository with the refs the tests deploy:
#                mcp/v1, mcp/v2 (v1 + /usr/share/mcp-vm/image = v2), mcp/broken (v2 whose
#                init exits: it never boots), mcp/v3 (v2 + image = v3)
#   image.env    what the harness needs to know (refs' checksums, kernel version)
# <hash> covers this script and scripts/vm/: a change rebuilds, anything else reuses.
# Debian's packages are kept in a flat repository outside the clone, as Go keeps its module
# cache: ${MCP_CACHE_DIR:-$XDG_CACHE_HOME/mcp}/vm-debcache (default ~/.cache/mcp), so a
# rebuild, or a fresh clone's first build, needs no network; without it they are downloaded. Needs root; installs qemu-system-x86, mmdebstrap, ostree and apt-utils.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$PWD/scripts/vm
hash=$(cat "$0" "$files"/* | sha256sum | cut -c1-12)
out=$PWD/bin/vm-$hash
if [ -s "$out/image.env" ]; then ln -sfn "vm-$hash" bin/vm; echo "$out"; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "build-vm-image.sh: needs root (mmdebstrap --mode=root, ostree admin)" >&2; exit 1; }
for p in qemu-system-x86_64:qemu-system-x86 mmdebstrap:mmdebstrap ostree:ostree apt-ftparchive:apt-utils debugfs:e2fsprogs; do
  command -v "${p%%:*}" >/dev/null && continue
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    qemu-system-x86 mmdebstrap ostree apt-utils e2fsprogs >/dev/null
  break
done
echo "building the VM node image (once; cached in $out)" >&2
W=$(mktemp -d "$PWD/bin/.vm-build.XXXXXX")
# The build's own status is the script's: a scratch directory that will not go away (ostree
# marks deployments immutable) is said and left in bin/, and never fails a good build.
cleanup() {
  local rc=$?
  # (chattr fails on the tree's symbolic links; under set -e that must not end the trap)
  [ ! -d "$W/sysroot/ostree/deploy" ] || chattr -R -i "$W/sysroot/ostree/deploy" 2>/dev/null || true
  rm -rf "$W" || echo "build-vm-image.sh: could not remove the scratch directory $W" >&2
  exit "$rc"
}
trap cleanup EXIT
debcache=${MCP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp}/vm-debcache
if [ ! -d "$debcache" ] && [ -d bin/vm-debcache ]; then mkdir -p "${debcache%/*}" && mv bin/vm-debcache "$debcache"; fi
mkdir -p "$debcache"

rootfs() { # mirror... : the root filesystem tarball $W/base.tar
  mmdebstrap --mode=root --variant=minbase --aptopt='APT::Install-Recommends "false"' \
    --include=systemd-sysv,udev,dbus,kmod,procps,e2fsprogs,linux-image-amd64,dracut,ostree,ostree-boot \
    --skip=download/empty --skip=essential/unlink \
    --setup-hook="mkdir -p \"\$1\"/var/cache/apt/archives/ && { cp $debcache/*.deb \"\$1\"/var/cache/apt/archives/ 2>/dev/null || true; }" \
    --essential-hook='mkdir -p "$1"/etc/dracut.conf.d' \
    --essential-hook="copy-in $files/dracut-vm.conf /etc/dracut.conf.d/" \
    --customize-hook="sync-out /var/cache/apt/archives $debcache" \
    --customize-hook='echo vmnode > "$1/etc/hostname"' \
    --customize-hook='chroot "$1" passwd -d root' \
    --customize-hook="copy-in $files/vm-agent $files/vm-ignition $files/vm-agent.service $files/ignition-firstboot.service $files/mcp-agent.service $files/run-mcp.mount $files/run-updates.mount /etc/systemd/system/" \
    --customize-hook='mv "$1/etc/systemd/system/vm-agent" "$1/etc/systemd/system/vm-ignition" "$1/usr/bin/"' \
    --customize-hook="copy-in $files/10-vm.network /etc/systemd/network/" \
    --customize-hook='mkdir -p "$1/etc/systemd/system-generators"' \
    --customize-hook="copy-in $files/ignition-firstboot-generator /etc/systemd/system-generators/" \
    --customize-hook='chmod 755 "$1/etc/systemd/system-generators/ignition-firstboot-generator"' \
    --customize-hook='chroot "$1" systemctl enable vm-agent.service mcp-agent.service run-mcp.mount run-updates.mount systemd-networkd.service serial-getty@ttyS0.service' \
    --customize-hook='chroot "$1" systemctl mask e2scrub_reap.service e2scrub_all.timer fstrim.timer dpkg-db-backup.timer getty@tty1.service' \
    --customize-hook="copy-in $files/ostree-layout.conf /usr/lib/tmpfiles.d/" \
    bookworm "$W/base.tar" "$@"
}
# The root filesystem tarball is kept until the image is done, so a failure after it does
# not cost another mmdebstrap run.
tarball=$PWD/bin/.vm-rootfs-$hash.tar
if [ -s "$tarball" ]; then
  mv "$tarball" "$W/base.tar"
elif [ -s "$debcache/Release" ] && rootfs "deb [trusted=yes] file://$debcache ./" 2>"$W/offline.log"; then
  echo "root filesystem from the package cache" >&2
else
  [ -s "$debcache/Release" ] && { echo "the package cache is not enough; downloading:" >&2; tail -3 "$W/offline.log" >&2; }
  uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  rootfs "deb ${uri:-http://deb.debian.org/debian} bookworm main" "deb ${uri:-http://deb.debian.org/debian} bookworm-updates main"
  (cd "$debcache" && rm -rf partial lock && apt-ftparchive packages . >Packages &&
    apt-ftparchive -o APT::FTPArchive::Release::Suite=bookworm -o APT::FTPArchive::Release::Codename=bookworm release . >Release)
fi

# The root made an OSTree tree: kernel and initramfs where ostree looks, /etc in /usr/etc,
# an empty /var (ostree-layout.conf recreates it), the top-level links into /var.
R=$W/root
mkdir "$R" && tar -xpf "$W/base.tar" -C "$R" --numeric-owner --xattrs --xattrs-include='*' && mv "$W/base.tar" "$tarball"
kver=$(ls "$R/usr/lib/modules")
cp "$R/boot/vmlinuz-$kver" "$R/usr/lib/modules/$kver/vmlinuz"
cp "$R/boot/initrd.img-$kver" "$R/usr/lib/modules/$kver/initramfs.img"
rm -rf "$R"/boot/* "$R"/vmlinuz* "$R"/initrd.img*
: >"$R/etc/fstab"
mv "$R/etc" "$R/usr/etc"
rm -rf "$R/var" && mkdir "$R/var"
rm -rf "$R/home" "$R/root" "$R/opt" "$R/srv" "$R/mnt" "$R/media" "$R/usr/local"
for d in home:var/home root:var/roothome opt:var/opt srv:var/srv mnt:var/mnt media:run/media; do ln -s "${d#*:}" "$R/${d%%:*}"; done
ln -s ../var/usrlocal "$R/usr/local"
rm -rf "$R/tmp" && mkdir -m 1777 "$R/tmp"
for d in dev run proc sys; do rm -rf "${R:?}/$d"; mkdir "$R/$d"; done
mkdir "$R/sysroot" && ln -s sysroot/ostree "$R/ostree"

# Commits: v1 (the root), v2 and v3 (a file more), broken (v2 whose init exits).
repo=$W/repo
ostree --repo="$repo" init --mode=bare
commit() { # ref version subject ostree-commit-args...
  local ref=$1 v=$2 s=$3; shift 3
  ostree --repo="$repo" commit --branch="$ref" --subject="$s" --add-metadata-string=version="$v" "$@" >/dev/null
}
commit mcp/v1 v1 "image v1" --tree=dir="$R"
overlay() { mkdir -p "$W/ov-$1/usr/share/mcp-vm"; echo "$1" >"$W/ov-$1/usr/share/mcp-vm/image"; }
overlay v2 && commit mcp/v2 v2 "image v2" --tree=ref=mcp/v1 --tree=dir="$W/ov-v2"
overlay v3 && commit mcp/v3 v3 "image v3" --tree=ref=mcp/v2 --tree=dir="$W/ov-v3"
overlay broken && mkdir -p "$W/ov-broken/usr/lib/systemd" && cp "$files/broken-init" "$W/ov-broken/usr/lib/systemd/systemd"
commit mcp/broken broken "image broken: its init exits" --tree=ref=mcp/v2 --tree=dir="$W/ov-broken"
rm -rf "$R"

# The sysroot with v1 deployed, as a disk; the node's repo has remote "vm".
S=$W/sysroot
mkdir "$S" && ostree admin init-fs "$S"
ostree admin os-init --sysroot="$S" debian
ostree --repo="$S/ostree/repo" config set sysroot.bootloader none
ostree --repo="$S/ostree/repo" remote add --no-gpg-verify vm file:///run/updates/repo
ostree --repo="$S/ostree/repo" pull-local --remote=vm "$repo" mcp/v1
ostree admin deploy --sysroot="$S" --os=debian --karg=root=/dev/vda --karg=rw --karg=console=ttyS0 --karg=panic=1 vm:mcp/v1
mkdir -p "$W/out/updates"
truncate -s 6G "$W/out/node.img" && mkfs.ext4 -q -F -L root -d "$S" "$W/out/node.img"
ostree --repo="$W/out/updates/repo" init --mode=archive
ostree --repo="$W/out/updates/repo" pull-local "$repo" mcp/v1 mcp/v2 mcp/v3 mcp/broken
{
  echo "KERNEL=$kver"
  for r in v1 v2 v3 broken; do echo "COMMIT_${r^^}=$(ostree --repo="$repo" rev-parse mcp/$r)"; done
} >"$W/out/image.env"
rm -rf "$out" && mv "$W/out" "$out" && rm -f "$tarball"
ln -sfn "vm-$hash" bin/vm
echo "$out"
