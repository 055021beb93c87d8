local clock = require "gpuledger.clock"

describe("gpuledger.clock", function()
  describe("parse_duration", function()
    it("reads Go's forms", function()
      assert.equal(15, clock.parse_duration("15s"))
      assert.equal(90, clock.parse_duration("1m30s"))
      assert.equal(0.5, clock.parse_duration("500ms"))
      assert.equal(7200, clock.parse_duration("2h"))
      assert.equal(5400, clock.parse_duration("1.5h"))
      assert.equal(0, clock.parse_duration("0"))
    end)

    it("refuses a duration longer than Go's longest, about 292 years, and one of hundreds of digits", function()
      assert.equal(2562047 * 3600, clock.parse_duration("2562047h"))
      for _, long in ipairs { "2562048h", "99999999999999h", ("9"):rep(400) .. "s", "-" .. ("9"):rep(400) .. "s" } do
        local value, err = clock.parse_duration(long)
        assert.is_nil(value, long)
        assert.matches("longer than the longest, about 292 years", err)
      end
    end)

    it("reads a negative duration", function()
      assert.equal(-5, clock.parse_duration("-5s"))
    end)

    it("refuses text that is not a duration", function()
      for _, bad in ipairs { "", "5", "s", "1x", "5S", "1h-5m", "abc", "1 h", "00" } do
        local value, err = clock.parse_duration(bad)
        assert.is_nil(value, bad)
        assert.is_string(err, bad)
      end
    end)

    it("reads d, w and y only when long units are allowed", function()
      assert.is_nil(clock.parse_duration("7d"))
      assert.is_nil(clock.parse_duration("1w"))
      assert.is_nil(clock.parse_duration("1y"))
      assert.equal(7 * 86400, clock.parse_duration("7d", true))
      assert.equal(7 * 86400, clock.parse_duration("1w", true))
      assert.equal(365 * 86400, clock.parse_duration("1y", true))
    end)
  end)

  describe("format_duration", function()
    it("prints the way Go prints a duration", function()
      assert.equal("15s", clock.format_duration(15))
      assert.equal("1m30s", clock.format_duration(90))
      assert.equal("2h0m0s", clock.format_duration(7200))
      assert.equal("500ms", clock.format_duration(0.5))
      assert.equal("0s", clock.format_duration(0))
      assert.equal("-5s", clock.format_duration(-5))
    end)
  end)

  describe("human", function()
    it("is <1m under a minute (30s, 59s)", function()
      assert.equal("<1m", clock.human(30))
      assert.equal("<1m", clock.human(59))
    end)

    it("is minutes under an hour", function()
      assert.equal("1m", clock.human(60))
      assert.equal("45m", clock.human(45 * 60))
      assert.equal("59m", clock.human(3599))
    end)

    it("is hours and minutes under 48 hours", function()
      assert.equal("3h0m", clock.human(3 * 3600))
      assert.equal("6h12m", clock.human(6 * 3600 + 12 * 60))
      assert.equal("47h59m", clock.human(47 * 3600 + 59 * 60))
    end)

    it("is days and hours from 48 hours", function()
      assert.equal("2d0h", clock.human(48 * 3600))
      assert.equal("2d1h", clock.human(49 * 3600))
      assert.equal("2d2h", clock.human(50 * 3600 + 59 * 60))
    end)

    it("takes float seconds", function()
      assert.equal("45m", clock.human(2700.75))
    end)
  end)

  describe("RFC 3339", function()
    it("parses UTC", function()
      assert.equal(1795939200, clock.parse_time("2026-11-29T08:00:00Z"))
    end)

    it("parses an offset", function()
      assert.equal(1795939200, clock.parse_time("2026-11-29T09:30:00+01:30"))
      assert.equal(1795939200, clock.parse_time("2026-11-29T03:00:00-05:00"))
    end)

    it("parses fractions of a second (nanoseconds, as Go writes them)", function()
      assert.equal(1795939200.25, clock.parse_time("2026-11-29T08:00:00.25Z"))
      assert.near(1795939200.123456789, clock.parse_time("2026-11-29T08:00:00.123456789Z"), 1e-6)
    end)

    it("refuses text that is not an instant", function()
      for _, bad in ipairs { "2026-11-29", "yesterday", "2026-11-29T08:00:00", "2026-11-29T08:00:00+0100" } do
        local value, err = clock.parse_time(bad)
        assert.is_nil(value, bad)
        assert.is_string(err, bad)
      end
      assert.is_nil(clock.parse_time(nil))
    end)

    it("formats in UTC with Z and drops trailing zeros of a fraction", function()
      assert.equal("2026-11-29T08:00:00Z", clock.format_time(1795939200))
      assert.equal("2026-11-29T08:00:00.25Z", clock.format_time(1795939200.25))
    end)

    it("round-trips", function()
      local t = clock.parse_time("2024-02-29T23:59:59Z")
      assert.equal("2024-02-29T23:59:59Z", clock.format_time(t))
    end)

    it("formats the header stamp", function()
      assert.equal("2026-11-29 08:00:00Z", clock.format_stamp(1795939200.9))
    end)
  end)
end)
