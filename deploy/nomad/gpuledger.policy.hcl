# The Nomad ACL policy gpuledger's token needs: read its own node and agent,
# and read the jobs and allocations of every namespace (to tell whom each GPU
# was reserved for). It changes nothing.
#   nomad acl policy apply -description "gpuledger (read-only)" gpuledger gpuledger.policy.hcl
#   nomad acl token create -name gpuledger -policy gpuledger
# With workload identity (gpuledger.nomad.hcl's default, -var workload_identity=true),
# bind it to the job instead:
#   nomad acl policy apply -namespace default -job gpuledger gpuledger gpuledger.policy.hcl

agent {
  policy = "read"
}

node {
  policy = "read"
}

namespace "*" {
  capabilities = ["read-job"]
}
