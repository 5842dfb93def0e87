package model

import "strings"

// ManagedPrefixes are the trees whose files mcp manages on a node: configuration and state
// (/etc, /var), and the two trees a CoreOS node keeps writable for software of its own —
// /usr/local and /opt, which on Fedora CoreOS and RHCOS are links into /var
// (/usr/local → /var/usrlocal, /opt → /var/opt). Never the rest of the OS. The
// configuration refuses other paths, and the node agent writes under these by default.
var ManagedPrefixes = []string{"/etc", "/var", "/usr/local", "/opt"}

// CoreOSLinks are the links Fedora CoreOS and RHCOS have from their writable trees into
// /var (path → target, as rpm-ostree and systemd-tmpfiles make them): where a path through
// them lands on such a node.
var CoreOSLinks = map[string]string{
	"/usr/local": "../var/usrlocal", "/opt": "var/opt", "/home": "var/home",
	"/root": "var/roothome", "/srv": "var/srv", "/mnt": "var/mnt",
}

// Unmanaged says why the clean absolute path p is not one mcp manages ("" when it is):
// a path strictly under one of ManagedPrefixes is.
func Unmanaged(p string) string {
	for _, a := range ManagedPrefixes {
		switch {
		case strings.HasPrefix(p, a+"/"):
			return ""
		case p == a:
			return "a managed tree's top directory, which the OS makes: files go below it"
		}
	}
	if p == "/usr" || strings.HasPrefix(p, "/usr/") {
		return "/usr is the OS image's own: read-only on Fedora CoreOS and RHCOS, and replaced by every OS update " +
			"(change it through os_image); of /usr only /usr/local (there a link to /var/usrlocal) is for local files"
	}
	return "outside " + strings.Join(ManagedPrefixes[:len(ManagedPrefixes)-1], ", ") + " and " +
		ManagedPrefixes[len(ManagedPrefixes)-1] + ": mcp manages configuration, state and local software, not the OS"
}
