# The quickstart: two pools of a local fleet (./fleet, one directory per node), a few
# configs, and no cluster. Run `mcp plan`, then `mcp apply`.

provider "local" {
  fleet = "./fleet"
  # Simulated durations, so the rollout can be watched.
  drain_duration  = "300ms"
  reboot_duration = "700ms"
}

state {
  backend = "local"
  path    = "mcp.state"
}

variable "ntp_server" {
  default     = "time.example.com"
  description = "NTP server every node syncs with"
}

pool "worker" {
  node_selector   = { "node-role.kubernetes.io/worker" = "" }
  max_unavailable = "50%"
}

pool "infra" {
  node_selector   = { "node-role.kubernetes.io/infra" = "" }
  max_unavailable = 1
}
