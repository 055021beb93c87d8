local H = require "helper"
local docker = require "gpuledger.sources.docker"
local json = require "gpuledger.json"

local ALLOC = "9eab414d-13fc-1cbe-c7ac-e9e1498a3fb3"

describe("gpuledger.sources.docker", function()
  describe("describe", function()
    it("strips the leading / of the name and reads the image", function()
      local c = docker.describe(H.container { id = H.cid("a"), name = "ffmpeg-manual", image = "jrottenberg/ffmpeg" })
      assert.equal(H.cid("a"), c.id)
      assert.equal("ffmpeg-manual", c.name)
      assert.equal("jrottenberg/ffmpeg", c.image)
      assert.equal("", c.allocId)
      assert.is_false(c.allocFromName)
    end)

    it("reads the Nomad labels", function()
      local c = docker.describe(H.container { id = H.cid("a"), name = "restreamer-x",
        labels = H.nomad_labels(ALLOC, "restreamer", "rs", "video") })
      assert.equal(ALLOC, c.allocId)
      assert.equal("restreamer", c.jobName)
      assert.equal("rs", c.taskName)
      assert.equal("video", c.namespace)
      assert.is_false(c.allocFromName)
    end)

    it("allocation_id beats alloc_id", function()
      local c = docker.describe(H.container { id = "x", name = "t", labels = {
        ["com.hashicorp.nomad.allocation_id"] = "11111111-1111-1111-1111-111111111111",
        ["com.hashicorp.nomad.alloc_id"] = "22222222-2222-2222-2222-222222222222",
      } })
      assert.equal("11111111-1111-1111-1111-111111111111", c.allocId)
    end)

    it("honours alloc_id alone", function()
      local c = docker.describe(H.container { id = "x", name = "t", labels = { ["com.hashicorp.nomad.alloc_id"] = ALLOC } })
      assert.equal(ALLOC, c.allocId)
    end)

    describe("an allocation from the name", function()
      it("enc-<uuid> is alloc <uuid>, task enc, from the name", function()
        local c = docker.describe(H.container { id = "x", name = "enc-" .. ALLOC })
        assert.equal(ALLOC, c.allocId)
        assert.equal("enc", c.taskName)
        assert.is_true(c.allocFromName)
      end)

      it("a task name with dashes keeps them", function()
        local c = docker.describe(H.container { id = "x", name = "gpu-enc-" .. ALLOC })
        assert.equal("gpu-enc", c.taskName)
      end)

      it("a task_name label overrides the name-derived task", function()
        local c = docker.describe(H.container { id = "x", name = "enc-" .. ALLOC,
          labels = { ["com.hashicorp.nomad.task_name"] = "encoder" } })
        assert.equal("encoder", c.taskName)
        assert.is_true(c.allocFromName)
      end)

      it("a label beats the name", function()
        local c = docker.describe(H.container { id = "x", name = "enc-" .. ALLOC,
          labels = { ["com.hashicorp.nomad.alloc_id"] = "22222222-2222-2222-2222-222222222222" } })
        assert.equal("22222222-2222-2222-2222-222222222222", c.allocId)
        assert.is_false(c.allocFromName)
      end)

      for _, name in ipairs {
        "gpu-d-new-c0",
        "enc-9eab414d",
        ALLOC,
        "enc-" .. ALLOC:upper(),
        "enc-" .. ALLOC .. "-x",
        "enc" .. ALLOC,
      } do
        it(name .. " is not Nomad's", function()
          local c = docker.describe(H.container { id = "x", name = name })
          assert.equal("", c.allocId)
          assert.is_false(c.allocFromName)
        end)
      end
    end)

    it("a container without Name or Config is described without error", function()
      local c = docker.describe({ Id = "abc" })
      assert.equal("abc", c.id)
      assert.equal("", c.name)
      assert.same({}, c.gpus)
    end)
  end)

  describe("gpus", function()
    it("NVIDIA_VISIBLE_DEVICES split on commas", function()
      assert.same({ "GPU-1", "GPU-2" }, docker.gpus(H.container { env = { "PATH=/bin", "NVIDIA_VISIBLE_DEVICES=GPU-1, GPU-2" } }))
    end)

    it("NVIDIA_VISIBLE_DEVICES beats DeviceRequests", function()
      assert.same({ H.UUID0 }, docker.gpus(H.container {
        env = { "NVIDIA_VISIBLE_DEVICES=" .. H.UUID0 },
        requests = { { Count = 0, DeviceIDs = { "1" } } },
      }))
    end)

    for _, value in ipairs { "", "void", "none" } do
      it("NVIDIA_VISIBLE_DEVICES=" .. value .. " is ignored", function()
        assert.same({}, docker.gpus(H.container { env = { "NVIDIA_VISIBLE_DEVICES=" .. value } }))
        assert.same({ "1" }, docker.gpus(H.container { env = { "NVIDIA_VISIBLE_DEVICES=" .. value },
          requests = { { Count = 0, DeviceIDs = { "1" } } } }))
      end)
    end

    it("NVIDIA_VISIBLE_DEVICES=all is all", function()
      assert.same({ "all" }, docker.gpus(H.container { env = { "NVIDIA_VISIBLE_DEVICES=all" } }))
    end)

    it("the first DeviceRequest naming DeviceIDs gives those ids", function()
      assert.same({ "0", "GPU-x" }, docker.gpus(H.container { requests = {
        { Count = 1, DeviceIDs = {} }, { Count = 0, DeviceIDs = { "0", "GPU-x" } },
      } }))
    end)

    it("a DeviceRequest with Count -1 (--gpus all) is all", function()
      assert.same({ "all" }, docker.gpus(H.container { requests = { { Count = -1 } } }))
    end)

    it("a DeviceRequest with Count 0 and no ids is nothing", function()
      assert.same({}, docker.gpus(H.container { requests = { { Count = 0 } } }))
    end)

    it("no environment and no requests is nothing", function()
      assert.same({}, docker.gpus(H.container {}))
    end)
  end)

  it("user_uid: root by default and by name, a uid as a number, another name none", function()
    for user, uid in pairs { [""] = 0, root = 0, ["root:root"] = 0, ["1000"] = 1000, ["1000:1000"] = 1000 } do
      assert.equal(uid, docker.user_uid(user), user)
    end
    for _, user in ipairs { "appuser", "1000x", "99999999999999999999", "-1" } do
      assert.is_nil(docker.user_uid(user), user)
    end
    assert.equal(0, docker.user_uid(nil))
  end)

  describe("reduce", function()
    local inspect = {
      Id = H.cid("a"), Name = "/restreamer-" .. ALLOC, State = { Pid = 4242 },
      Config = {
        Image = "registry.example/video/restreamer:2.4",
        Labels = {
          ["com.hashicorp.nomad.alloc_id"] = ALLOC,
          ["com.hashicorp.nomad.job_name"] = "restreamer",
          ["maintainer"] = "someone@example.com",
          ["org.opencontainers.image.source"] = "https://example/x",
        },
        Env = { "AWS_SECRET_ACCESS_KEY=hunter2", "NVIDIA_VISIBLE_DEVICES=GPU-1", "NOMAD_TOKEN=s3cr3t" },
        Cmd = { "ffmpeg", "-i", "secret.mkv" },
      },
      HostConfig = {
        DeviceRequests = { { Driver = "nvidia", Count = -1, DeviceIDs = {}, Capabilities = { { "gpu" } } } },
        Binds = { "/secret:/secret" },
      },
    }

    it("keeps only the com.hashicorp.nomad.* labels", function()
      local r = docker.reduce(inspect)
      assert.same({ ["com.hashicorp.nomad.alloc_id"] = ALLOC, ["com.hashicorp.nomad.job_name"] = "restreamer" }, r.Config.Labels)
    end)

    it("keeps only NVIDIA_VISIBLE_DEVICES of the environment", function()
      assert.same({ "NVIDIA_VISIBLE_DEVICES=GPU-1" }, docker.reduce(inspect).Config.Env)
    end)

    it("keeps the requests' Count and DeviceIDs only", function()
      assert.same({ { Count = -1, DeviceIDs = {} } }, docker.reduce(inspect).HostConfig.DeviceRequests)
    end)

    it("leaves no secret, command or bind in the JSON", function()
      local encoded = json.encode(docker.reduce(inspect))
      for _, secret in ipairs { "hunter2", "s3cr3t", "secret.mkv", "/secret", "someone@", "AWS_" } do
        assert.is_nil(encoded:find(secret, 1, true), secret)
      end
    end)

    it("keeps the main process and the user, which tell a container's processes", function()
      local r = docker.reduce(inspect)
      assert.same({ Pid = 4242 }, r.State)
      assert.equal(4242, docker.describe(r).mainPid)
      assert.equal(0, docker.describe(r).uid)
    end)

    it("describes the same after reduction", function()
      assert.same(docker.describe(inspect), docker.describe(docker.reduce(inspect)))
    end)

    it("writes an empty Env and DeviceRequests as JSON arrays, not objects", function()
      local encoded = json.encode(docker.reduce(H.container { id = "x", name = "plain" }))
      assert.truthy(encoded:find('"Env":[]', 1, true), encoded)
      assert.truthy(encoded:find('"DeviceRequests":[]', 1, true), encoded)
    end)
  end)
end)
