// Package macaddr reads a machine's MAC address as machine blocks keep it and the boot
// server compares it: one reading for the configuration language and mcp serve.
package macaddr

import (
	"net"
	"strings"
)

// Normal is a 48-bit MAC address in lower case with colons ("52:54:00:ab:cd:ef"), from the
// colon or hyphen form (iPXE's ${net0/mac:hexhyp}); ok is false when s is none.
func Normal(s string) (string, bool) {
	hw, err := net.ParseMAC(strings.ReplaceAll(s, "-", ":"))
	if err != nil || len(hw) != 6 {
		return "", false
	}
	return hw.String(), true
}
