# gpuledger's fleet view: one `gpuledger fleet serve` for the whole cluster,
# reading every node's agent (the system job gpuledger.nomad.hcl) and serving
# the fleet's page and /metrics on port 9878.
#   nomad job run -var checksum=sha256:<hex> gpuledger-fleet.nomad.hcl
# Discovery, by default the Nomad service gpuledger (needs a token that may
# read it, in NOMAD_TOKEN): -var 'discovery=["--consul","http://127.0.0.1:8500"]'
# or -var 'discovery=["--targets","gpu1:9877,gpu2:9877"]'.

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
  description = "where to download the binary from (default: the release's URL under release_base)"
}

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

variable "discovery" {
  type        = list(string)
  default     = ["--nomad-service", "gpuledger"]
  description = "how fleet finds the node agents: --nomad-service NAME, --consul ADDR or --targets host:port,..."
}

variable "consul" {
  type    = bool
  default = true
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
      for_each = var.consul ? [1] : []
      content {
        name     = "gpuledger-fleet"
        port     = "http"
        provider = "consul"
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

      config {
        command = "local/gpuledger"
        args    = concat(["fleet", "serve", "--listen", "0.0.0.0:${var.port}", "--interval", "30s"], var.discovery)
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
