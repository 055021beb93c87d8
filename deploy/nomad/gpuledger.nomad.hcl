# gpuledger on every GPU node: a Nomad system job running `gpuledger serve`
# (raw_exec: it reads other tasks' /proc/<pid>/cgroup, runs nvidia-smi and
# reads the Docker socket, which a container would hide from it).
#   nomad job run -var checksum=sha256:<hex> gpuledger.nomad.hcl
# The checksum is the binary's line of gpuledger-v<version>-checksums.txt.
# Without Consul: -var consul=false. Site rules: -var rules_url=<an archive of
# .lua files> (fetched into the task's rules.d; see docs/rules.md).
# Nomad's token: the variable NOMAD_TOKEN (a token with gpuledger.policy.hcl)
# in the task's environment, e.g. from Vault or a template; with workload
# identity (Nomad 1.5+) use gpuledger.wi.nomad.hcl instead. TLS: NOMAD_CACERT,
# NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY in env, as for the nomad CLI.

variable "version" {
  type        = string
  default     = "0.1.0"
  description = "the gpuledger release to run"
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
  type        = string
  default     = "https://github.com/gpuledger/gpuledger/releases/download"
  description = "release downloads: <release_base>/v<version>/gpuledger-v<version>-linux-amd64"
}

variable "datacenters" {
  type    = list(string)
  default = ["*"]
}

variable "consul" {
  type        = bool
  default     = true
  description = "register the Consul service gpuledger with a /healthz check"
}

variable "rules_url" {
  type        = string
  default     = ""
  description = "an archive (or go-getter URL) of site rule files for --rules"
}

job "gpuledger" {
  namespace   = "default"
  type        = "system"
  datacenters = var.datacenters

  constraint {
    attribute = "${attr.driver.docker}"
    value     = "1"
  }

  constraint {
    attribute = "${attr.unique.hostname}"
    operator  = "regexp"
    value     = "gpu|cuda"
  }

  group "ledger" {
    # The history survives a restart or an update of the job on this node.
    ephemeral_disk {
      sticky  = true
      migrate = false
      size    = 64
    }

    network {
      port "http" {
        static = 9877
      }
    }

    dynamic "service" {
      for_each = var.consul ? [1] : []
      content {
        name     = "gpuledger"
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

    task "gpuledger" {
      driver = "raw_exec"

      artifact {
        source      = var.artifact_url != "" ? var.artifact_url : "${var.release_base}/v${var.version}/gpuledger-v${var.version}-linux-amd64"
        destination = "local/gpuledger"
        mode        = "file"
        options {
          checksum = var.checksum
        }
      }

      dynamic "artifact" {
        for_each = var.rules_url != "" ? [var.rules_url] : []
        content {
          source      = artifact.value
          destination = "local/rules.d"
        }
      }

      # Keeps local/rules.d a directory when no rules archive is given.
      template {
        destination = "local/rules.d/README.txt"
        data        = "Site rules for gpuledger (--rules): the files of var.rules_url.\n"
      }

      config {
        command = "local/gpuledger"
        args = [
          "serve",
          "--listen", "0.0.0.0:9877",
          "--interval", "15s",
          "--node", "${node.unique.name}",
          "--nomad-node-id", "${node.unique.id}",
          "--history", "${NOMAD_ALLOC_DIR}/data/history.json",
          "--rules", "${NOMAD_TASK_DIR}/rules.d",
        ]
      }

      env {
        NOMAD_ADDR = "http://127.0.0.1:4646"
        # NOMAD_CACERT = "/etc/nomad.d/tls/nomad-agent-ca.pem"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
