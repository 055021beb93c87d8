# gpuledger's fleet view: one `gpuledger fleet serve` for the whole cluster,
# reading every node's agent (the system job gpuledger.nomad.hcl) and serving
# the fleet's page and /metrics on port 9878. Nomad 1.6+.
#   nomad job run -var checksum=sha256:<hex> gpuledger-fleet.nomad.hcl
#
# It finds the node agents where gpuledger.nomad.hcl registers them: give
# both jobs the same service_provider (nomad by default, or consul) and the
# same service name (node_service here, service_name there). With nomad, its
# workload identity reads the catalog: Nomad's implicit policy lets a job
# read service registrations, so no token and no policy are needed. With
# consul it asks the local Consul agent (consul_addr; a token, if your
# Consul needs one, in CONSUL_HTTP_TOKEN in env). Or list the nodes yourself:
# -var 'discovery=["--targets","gpu1:9877,gpu2:9877"]'.

variable "version" {
  type    = string
  default = "0.1.0"
}

variable "checksum" {
  type        = string
  description = "sha256:<hex> of gpuledger-v<version>-linux-amd64 (required)"
}

variable "artifact_url" {
  type        = string
  default     = ""
  description = "where to download the binary from: any go-getter source; default: the release's URL under release_base"
}

# No release has been published at this address yet: see gpuledger.nomad.hcl.
variable "release_base" {
  type    = string
  default = "https://github.com/gpuledger/gpuledger/releases/download"
}

variable "datacenters" {
  type    = list(string)
  default = ["*"]
}

variable "port" {
  type    = number
  default = 9878
}

variable "service_provider" {
  type        = string
  default     = "nomad"
  description = "where the node agents are registered and this job registers itself: nomad, consul, or none (then give discovery)"

  validation {
    condition     = contains(["nomad", "consul", "none"], var.service_provider)
    error_message = "The service_provider must be nomad, consul or none."
  }
}

variable "node_service" {
  type        = string
  default     = "gpuledger"
  description = "the service name of the node agents (gpuledger.nomad.hcl's service_name)"
}

variable "consul_addr" {
  type    = string
  default = "http://127.0.0.1:8500"
}

variable "discovery" {
  type        = list(string)
  default     = []
  description = "how fleet finds the node agents, when not by service_provider: --targets host:port,... (or --consul ADDR, --nomad-service NAME)"
}

locals {
  by_provider = {
    nomad  = ["--nomad-service", var.node_service]
    consul = ["--consul", var.consul_addr, "--consul-service", var.node_service]
    none   = []
  }
  discovery = length(var.discovery) > 0 ? var.discovery : local.by_provider[var.service_provider]
}

job "gpuledger-fleet" {
  namespace   = "default"
  type        = "service"
  datacenters = var.datacenters

  group "fleet" {
    count = 1

    network {
      port "http" {
        static = var.port
      }
    }

    dynamic "service" {
      for_each = var.service_provider != "none" ? [var.service_provider] : []
      content {
        name     = "gpuledger-fleet"
        port     = "http"
        provider = service.value
        tags     = ["prometheus", "metrics"]

        check {
          type     = "http"
          path     = "/healthz"
          interval = "30s"
          timeout  = "5s"
        }
      }
    }

    task "fleet" {
      driver = "raw_exec"

      artifact {
        source      = var.artifact_url != "" ? var.artifact_url : "${var.release_base}/v${var.version}/gpuledger-v${var.version}-linux-amd64"
        destination = "local/gpuledger"
        mode        = "file"
        options {
          checksum = var.checksum
        }
      }

      # The workload identity in NOMAD_TOKEN: enough to read Nomad's service
      # registrations (--nomad-service).
      identity {
        env = true
      }

      config {
        command = "local/gpuledger"
        args    = concat(["fleet", "serve", "--listen", "0.0.0.0:${var.port}", "--interval", "30s"], local.discovery)
      }

      env {
        NOMAD_ADDR = "http://127.0.0.1:4646"
      }

      resources {
        cpu    = 50
        memory = 48
      }
    }
  }
}
