package local

import (
	"os"
	"path/filepath"
	"strings"
)

// A local node stands for a Fedora CoreOS or RHCOS machine, so its root carries the units
// such an image ships in /usr/lib/systemd/system that real configurations enable, mask or
// give drop-ins to (kdump.service, iscsi.service, sshd.socket…): enabling one then links
// what `systemctl enable` links on the OS. Each file is a stand-in — a description, what
// the unit runs or listens on — but its [Install] section is the package's (a static unit
// has none). The list is what the corpus of real configurations (docs/corpus.md) and the
// held-out configs of issue 41 name, with Fedora CoreOS's presets (fedora-coreos-config,
// overlay.d/*/usr/lib/systemd/system-preset) and RHCOS's container runtime.

// VendorUnitDir is where a node's root holds the OS's units.
const VendorUnitDir = "usr/lib/systemd/system"

// vendorUnit is one unit the OS ships: its description, its type's section (without the
// header) and its [Install] section's lines (none: a static unit).
type vendorUnit struct {
	description, body string
	install           []string
}

var (
	multiUser = []string{"WantedBy=multi-user.target"}
	sockets   = []string{"WantedBy=sockets.target"}
	timers    = []string{"WantedBy=timers.target"}
)

// vendorUnits are the OS's units by name, with their packages' [Install] sections.
var vendorUnits = map[string]vendorUnit{
	// systemd
	"getty@.service":           {"Getty on %I", "ExecStart=-/sbin/agetty --noclear - $TERM", []string{"WantedBy=getty.target", "DefaultInstance=tty1"}},
	"serial-getty@.service":    {"Serial Getty on %I", "ExecStart=-/sbin/agetty --keep-baud 115200,57600,38400,9600 - $TERM", []string{"WantedBy=getty.target"}},
	"systemd-resolved.service": {"Network Name Resolution", "ExecStart=/usr/lib/systemd/systemd-resolved", []string{"WantedBy=sysinit.target", "Alias=dbus-org.freedesktop.resolve1.service"}},
	"systemd-sysctl.service":   {"Apply Kernel Variables", "Type=oneshot\nExecStart=/usr/lib/systemd/systemd-sysctl", nil},
	"fstrim.service":           {"Discard unused blocks on filesystems from /etc/fstab", "Type=oneshot\nExecStart=/usr/sbin/fstrim --listed-in /etc/fstab:/proc/self/mountinfo --verbose --quiet-unsupported", nil},
	"fstrim.timer":             {"Discard unused filesystem blocks once a week", "OnCalendar=weekly", timers},
	// networking
	"NetworkManager.service": {"Network Manager", "Type=dbus\nBusName=org.freedesktop.NetworkManager\nExecStart=/usr/sbin/NetworkManager --no-daemon",
		[]string{"WantedBy=multi-user.target", "Alias=dbus-org.freedesktop.NetworkManager.service", "Also=NetworkManager-dispatcher.service"}},
	"NetworkManager-dispatcher.service":  {"Network Manager Script Dispatcher Service", "Type=dbus\nBusName=org.freedesktop.nm_dispatcher\nExecStart=/usr/libexec/nm-dispatcher", []string{"Alias=dbus-org.freedesktop.nm-dispatcher.service"}},
	"NetworkManager-wait-online.service": {"Network Manager Wait Online", "Type=oneshot\nExecStart=/usr/bin/nm-online -s -q", []string{"WantedBy=network-online.target"}},
	"nftables.service":                   {"Netfilter Tables", "Type=oneshot\nExecStart=/sbin/nft -f /etc/sysconfig/nftables.conf", multiUser},
	"dnsmasq.service":                    {"DNS caching server.", "ExecStart=/usr/sbin/dnsmasq", multiUser},
	"wg-quick@.service":                  {"WireGuard via wg-quick(8) for %I", "Type=oneshot\nExecStart=/usr/bin/wg-quick up %i", multiUser},
	"chronyd.service":                    {"NTP client/server", "Type=forking\nExecStart=/usr/sbin/chronyd $OPTIONS", multiUser},
	"chrony-wait.service":                {"Wait for chrony to synchronize system clock", "Type=oneshot\nExecStart=/usr/bin/chronyc -h 127.0.0.1,::1 waitsync 0 0.1 0.0 1", multiUser},
	// remote access
	"sshd.service":  {"OpenSSH server daemon", "ExecStart=/usr/sbin/sshd -D $OPTIONS", multiUser},
	"sshd.socket":   {"OpenSSH Server Socket", "ListenStream=22\nAccept=yes", sockets},
	"sshd@.service": {"OpenSSH per-connection server daemon", "ExecStart=-/usr/sbin/sshd -i $OPTIONS\nStandardInput=socket", nil},
	// storage
	"iscsi.service":      {"Login and scanning of iSCSI devices", "Type=oneshot\nExecStart=/usr/sbin/iscsiadm -m node --loginall=automatic -W", []string{"WantedBy=remote-fs.target"}},
	"iscsid.service":     {"Open-iSCSI", "Type=notify\nExecStart=/usr/sbin/iscsid -f", []string{"WantedBy=multi-user.target", "Also=iscsid.socket"}},
	"iscsid.socket":      {"Open-iSCSI iscsid Socket", "ListenStream=@ISCSIADM_ABSTRACT_NAMESPACE", sockets},
	"iscsiuio.socket":    {"Open-iSCSI iscsiuio Socket", "ListenStream=@ISCSID_UIP_ABSTRACT_NAMESPACE", sockets},
	"multipathd.service": {"Device-Mapper Multipath Device Controller", "Type=notify\nExecStart=/usr/sbin/multipathd -d -s", []string{"WantedBy=sysinit.target"}},
	"multipathd.socket":  {"multipathd control socket", "ListenStream=@/org/kernel/linux/storage/multipathd", sockets},
	// the OS and its updates
	"kdump.service":                 {"Crash recovery kernel arming", "Type=oneshot\nExecStart=/usr/bin/kdumpctl start\nRemainAfterExit=yes", multiUser},
	"auditd.service":                {"Security Audit Logging Service", "Type=forking\nExecStart=/sbin/auditd", multiUser},
	"irqbalance.service":            {"irqbalance daemon", "ExecStart=/usr/sbin/irqbalance $IRQBALANCE_ARGS", multiUser},
	"zincati.service":               {"Zincati Update Agent", "ExecStart=/usr/libexec/zincati agent ${ZINCATI_VERBOSITY}", multiUser},
	"rpm-ostreed.service":           {"rpm-ostree System Management Daemon", "Type=dbus\nBusName=org.projectatomic.rpmostree1\nExecStart=/usr/bin/rpm-ostree start-daemon", nil},
	"rpm-ostreed-automatic.service": {"rpm-ostree Automatic Update", "Type=simple\nExecStart=/usr/bin/rpm-ostree upgrade --quiet --trigger-automatic-update-policy", nil},
	"rpm-ostreed-automatic.timer":   {"rpm-ostree Automatic Update Trigger", "OnBootSec=1h\nOnUnitInactiveSec=1d", timers},
	"rpm-ostree-countme.service":    {"Weekly rpm-ostree Count Me reporting", "Type=oneshot\nExecStart=/usr/bin/rpm-ostree countme", nil},
	"rpm-ostree-countme.timer":      {"Weekly rpm-ostree Count Me timer", "OnCalendar=weekly", timers},
	// containers
	"podman.service":             {"Podman API Service", "Type=exec\nExecStart=/usr/bin/podman $LOGGING system service", []string{"WantedBy=default.target"}},
	"podman.socket":              {"Podman API Socket", "ListenStream=%t/podman/podman.sock", sockets},
	"podman-auto-update.service": {"Podman auto-update service", "Type=oneshot\nExecStart=/usr/bin/podman auto-update", []string{"WantedBy=default.target"}},
	"podman-auto-update.timer":   {"Podman auto-update timer", "OnCalendar=daily", timers},
	"podman-restart.service":     {"Podman Start All Containers With Restart Policy Set To Always", "Type=oneshot\nExecStart=/usr/bin/podman start --all --filter restart-policy=always", []string{"WantedBy=default.target"}},
	"docker.service":             {"Docker Application Container Engine", "ExecStart=/usr/bin/dockerd --host=fd://", multiUser},
	"docker.socket":              {"Docker Socket for the API", "ListenStream=/run/docker.sock", sockets},
	"containerd.service":         {"containerd container runtime", "ExecStart=/usr/bin/containerd", multiUser},
	"crio.service":               {"Container Runtime Interface for OCI (CRI-O)", "Type=notify\nExecStart=/usr/bin/crio $CRIO_CONFIG_OPTIONS", multiUser},
}

// VendorUnits are the files of a new node's VendorUnitDir, by name: vendorUnits written out.
func VendorUnits() map[string]string {
	out := make(map[string]string, len(vendorUnits))
	for name, u := range vendorUnits {
		out[name] = u.file(name)
	}
	return out
}

// file is the unit file of u, called name.
func (u vendorUnit) file(name string) string {
	section := map[string]string{".service": "Service", ".socket": "Socket", ".timer": "Timer"}[filepath.Ext(name)]
	var b strings.Builder
	b.WriteString("# A stand-in for the OS's unit in mcp's local fleet: its [Install] section is the package's.\n")
	b.WriteString("[Unit]\nDescription=" + u.description + "\n\n[" + section + "]\n" + u.body + "\n")
	if len(u.install) > 0 {
		b.WriteString("\n[Install]\n" + strings.Join(u.install, "\n") + "\n")
	}
	return b.String()
}

// writeVendorUnits writes the OS's units into a new root.
func writeVendorUnits(root string) error {
	dir := filepath.Join(root, VendorUnitDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range VendorUnits() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
