# Three local fleets, promoted canary → staging → prod (create them first: README.md).

stage "canary" {
  soak = "1h"
}

stage "staging" {
  after = ["canary"]
  soak  = "4h"
}

stage "prod" {
  after = ["staging"]
}

cluster "canary" {
  stage     = "canary"
  variables = { motd = "CANARY: this node gets changes first." }

  provider "local" {
    fleet = "./clusters/canary/fleet"
  }
  state {
    path = "./clusters/canary/mcp.state"
  }
}

cluster "staging" {
  stage     = "staging"
  variables = { ntp_server = "ntp.staging.example.com" }

  provider "local" {
    fleet = "./clusters/staging/fleet"
  }
  state {
    path = "./clusters/staging/mcp.state"
  }
}

cluster "prod" {
  stage = "prod"

  provider "local" {
    fleet = "./clusters/prod/fleet"
  }
  state {
    path = "./clusters/prod/mcp.state"
  }
}
