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

  # Pacing and maintenance windows (docs/configuration.md, "Pacing and windows"), e.g.:
  #   canary {
  #     count = 1      # worker-0 first, alone…
  #     soak  = "10s"  # …then 10s before the others start
  #   }
  #   max_failures = 2
  #   window {
  #     days      = ["sat", "sun"]
  #     start     = "02:00"
  #     duration  = "4h"
  #     time_zone = "Europe/Berlin"
  #   }
}

pool "infra" {
  node_selector   = { "node-role.kubernetes.io/infra" = "" }
  max_unavailable = 1
}
