# A fleet of three clusters (clusters.hcl): the pools and configs below are written once;
# each cluster block gives its own provider, state and variable values. See README.md and
# docs/fleets.md.

variable "ntp_server" {
  default     = "time.example.com"
  description = "NTP server every node syncs with"
}

variable "motd" {
  default = "This node's configuration is managed by mcp."
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = 1
}

config "00-motd" {
  pools = ["worker"]

  file "/etc/motd" {
    content   = "${var.motd}\n"
    on_change = ["none"]
  }
}

config "50-chrony" {
  pools = ["worker"]

  file "/etc/chrony.conf" {
    mode      = "0644"
    content   = "server ${var.ntp_server} iburst\ndriftfile /var/lib/chrony/drift\n"
    on_change = ["restart:chronyd.service"]
  }
}
