# gpuledger on every GPU node: a Nomad system job running `gpuledger serve`
# (raw_exec: it reads other tasks' /proc/<pid>/cgroup, runs nvidia-smi and
# reads the Docker socket, which a container would hide from it). Nomad 1.6+.
#
#   nomad acl policy apply -namespace default -job gpuledger gpuledger gpuledger.policy.hcl
#   nomad job run -var checksum=sha256:<hex> gpuledger.nomad.hcl
#
# The checksum is the binary's line of gpuledger-v<version>-checksums.txt.
#
# Nomad's token: by default the task's workload identity (NOMAD_TOKEN), with
# the policy bound to the job as above; no token is handed out. With
# -var workload_identity=false, put a token with gpuledger.policy.hcl in the
# task's environment yourself (a template from Vault, say).
#
# Where it runs: every node of every node pool. gpuledger on a node without
# nvidia-smi says so and asks nothing else; to keep it off such nodes, give
# -var node_pool=gpu, -var node_class=gpu or -var node_meta=<key> (a client
# meta key your GPU nodes set, e.g. meta { gpu = "true" }).
#
# Its service: registered in Nomad's own catalog by default (what the fleet
# job's default discovery reads); -var service_provider=consul registers it in
# Consul instead, none registers nothing.
#
# Site rules: -var rules_url=<an archive of .lua files> (fetched into the
# task's rules.d; see docs/rules.md). TLS to Nomad: NOMAD_CACERT,
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
  description = "where to download the binary from: any go-getter source (https://, s3::, a file path on the clients); default: the release's URL under release_base"
}

# No release has been published at this address yet: until one is, build
# dist/ with scripts/release and serve it yourself (see README, "Hosting the
# binary yourself"), then give -var artifact_url=... or -var release_base=...
variable "release_base" {
  type        = string
  default     = "https://github.com/gpuledger/gpuledger/releases/download"
  description = "release downloads: <release_base>/v<version>/gpuledger-v<version>-linux-amd64"
}

variable "datacenters" {
  type    = list(string)
  default = ["*"]
}

variable "node_pool" {
  type        = string
  default     = "all"
  description = "the node pool to run in (all: every pool)"
}

variable "node_class" {
  type        = string
  default     = ""
  description = "run only on nodes of this node class (empty: any class)"
}

variable "node_meta" {
  type        = string
  default     = ""
  description = "run only on nodes whose client meta sets this key (empty: no such constraint)"
}

variable "workload_identity" {
  type        = bool
  default     = true
  description = "use the task's workload identity as its Nomad token (bind gpuledger.policy.hcl to the job)"
}

variable "service_provider" {
  type        = string
  default     = "nomad"
  description = "where the service is registered: nomad (Nomad's catalog), consul, or none"

  validation {
    condition     = contains(["nomad", "consul", "none"], var.service_provider)
    error_message = "The service_provider must be nomad, consul or none."
  }
}

variable "service_name" {
  type        = string
  default     = "gpuledger"
  description = "the name the node agents are registered under (the fleet job's node_service)"
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
  node_pool   = var.node_pool

  dynamic "constraint" {
    for_each = var.node_class != "" ? [var.node_class] : []
    content {
      attribute = "${node.class}"
      value     = constraint.value
    }
  }

  dynamic "constraint" {
    for_each = var.node_meta != "" ? [var.node_meta] : []
    content {
      attribute = format("$${meta.%s}", constraint.value)
      operator  = "is_set"
    }
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
      for_each = var.service_provider != "none" ? [var.service_provider] : []
      content {
        name     = var.service_name
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

      # The workload identity in NOMAD_TOKEN. --nomad-node-id below is what
      # makes it enough: before Nomad 1.11, /v1/agent/self refuses a workload
      # identity (HTTP 500).
      dynamic "identity" {
        for_each = var.workload_identity ? [1] : []
        content {
          env = true
        }
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
