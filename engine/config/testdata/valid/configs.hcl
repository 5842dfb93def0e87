config "00-motd" {
  pools = ["worker", "infra"]

  file "/etc/motd" {
    content   = "This node's configuration is managed by mcp. Local changes are reverted.\n"
    on_change = ["none"]
  }
}

config "50-chrony" {
  pools = ["worker", "infra"]

  file "/etc/chrony.conf" {
    mode      = "0644"
    content   = templatefile("chrony.conf.tpl", { server = var.ntp_server })
    on_change = ["restart:chronyd.service"]
  }
}

config "60-node-exporter" {
  pools = ["worker"]

  file "/etc/sysconfig/node-exporter" {
    mode      = "0600"
    content   = "OPTIONS=--collector.systemd --web.listen-address=:9100\n"
    on_change = ["restart:node-exporter.service"]
  }

  unit "node-exporter.service" {
    enabled   = true
    contents  = file("node-exporter.service")
    on_change = ["restart:node-exporter.service"]
  }
}

config "70-infra-kargs" {
  pools       = ["infra"]
  kernel_args = ["nosmt", "mitigations=auto"]
}
