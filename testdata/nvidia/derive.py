#!/usr/bin/env python3
"""Derive fake-nvidia-smi fixture directories from real nvidia-smi captures.

Reads the nvidia_gpu_exporter captures (github.com/utkuozdemir/nvidia_gpu_exporter,
`internal/captures/*.txt`) in the directory given as the only argument, and writes, for each capture, testdata/nvidia/<model>-<driver>/ (the "load"
section) and .../idle/ (the "idle" section), in the file layout that
tests/fakes/nvidia-smi reads (tests/fakes/README.md, "nvidia-smi").

For each query gpuledger makes, the columns are picked from the capture's
`--query-gpu=... --format=csv` table by header name (the part before " ["),
with the driver's own aliases from --help-query-gpu / --help-query-compute-apps
(so `used_memory` is read from `used_gpu_memory`, and `clocks_throttle_reasons.*`
from `clocks_event_reasons.*`). Units are dropped as `nounits` would drop them
(`74211 MiB` -> `74211`); bracketed values such as `[N/A]` stay. A field missing
from the driver's help list goes to `unknown-fields` and gets no answer file.
Beside them: `nvidia-smi -L` (list.txt), `nvidia-smi -q` (query.txt) and
`nvidia-smi --version` (version.txt) verbatim, the
driver's `--help-query-gpu` text (help-query-gpu.txt) and the
whole `--query-gpu` table without units (query-gpu-table.csv: a header of field
names, then the rows), from which the fake answers any other field list, as the
health query asks one built from the help.

The derived files are committed; tests never run this script.
"""
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# gpuledger's queries (docs/sources.md#nvidia-smi), by the answer file the fake reads.
QUERIES = {
    "query-gpu": ("gpu", ["index", "uuid", "name", "pci.bus_id", "memory.used", "memory.total",
                          "utilization.gpu", "utilization.memory", "temperature.gpu", "power.draw",
                          "encoder.stats.sessionCount", "encoder.stats.averageFps"]),
    "tlimit": ("gpu", ["index", "temperature.gpu.tlimit"]),
    "clocks_event_reasons": ("gpu", ["index", "clocks_event_reasons.hw_thermal_slowdown",
                                     "clocks_event_reasons.sw_thermal_slowdown"]),
    "clocks_throttle_reasons": ("gpu", ["index", "clocks_throttle_reasons.hw_thermal_slowdown",
                                        "clocks_throttle_reasons.sw_thermal_slowdown"]),
    "compute-apps": ("apps", ["gpu_uuid", "pid", "used_memory", "process_name"]),
}

FENCE = "#" * 80
TITLE = re.compile(r"^# (\w[\w-]*) :: (.+)$")
HELP_ENTRY = re.compile(r'^"[^"]+"(?: or "[^"]+")*\s*$')


def sections(text):
    """Returns {(phase, title): body} for the capture's fenced sections."""
    lines = text.split("\n")
    found, i = {}, 0
    while i < len(lines):
        m = TITLE.match(lines[i]) if i > 0 and lines[i - 1] == FENCE else None
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j] != FENCE:
            j += 1
        k = j + 1
        while k < len(lines) and lines[k] != FENCE:
            k += 1
        body = "\n".join(lines[j + 1:k]).strip("\n")
        found[(m.group(1), m.group(2).strip())] = body
        i = k
    return found


def help_aliases(body):
    """Maps each field name of a --help-query-* text to its alias group."""
    groups = {}
    for line in body.split("\n"):
        if HELP_ENTRY.match(line):
            names = frozenset(re.findall(r'"([^"]+)"', line))
            for name in names:
                groups[name] = names
    return groups


def table(body):
    """Parses a `--format=csv` answer: [(name, unit)] header and the rows."""
    lines = [ln for ln in body.split("\n") if ln.strip()]
    header = []
    for cell in lines[0].split(", "):
        m = re.match(r"^(.*?) \[(.+)\]$", cell)
        header.append((m.group(1), m.group(2)) if m else (cell, None))
    rows = [ln.split(", ") for ln in lines[1:]]
    for row in rows:
        assert len(row) == len(header), f"row has {len(row)} cells, header {len(header)}"
    return header, rows


def nounits(value, unit):
    """The cell as `nounits` prints it."""
    if unit and not value.startswith("[") and value.endswith(" " + unit):
        return value[: -len(unit) - 1]
    return value


def answer(fields, aliases, header, rows):
    """The noheader,nounits answer for fields, or the first field the driver lacks."""
    cols = []
    for field in fields:
        if field not in aliases:
            return None, field
        names = [name for name, _ in header]
        hits = [i for i, name in enumerate(names) if name in aliases[field]]
        assert hits, f"{field}: known to the driver but not in the captured table"
        cols.append(hits[0])
    text = "".join(", ".join(nounits(row[i], header[i][1]) for i in cols) + "\n" for row in rows)
    return text, None


def derive(capture, out_root):
    parts = capture.stem.split("__")            # linux-x86_64, nvidia-<model>, <driver>
    name = f"{parts[1].removeprefix('nvidia-')}-{parts[2]}"
    secs = sections(capture.read_text(encoding="utf-8"))
    aliases = {
        "gpu": help_aliases(secs[("capabilities", "help-query-gpu")]),
        "apps": help_aliases(secs[("capabilities", "help-query-compute-apps")]),
    }
    for phase, sub in (("load", ""), ("idle", "idle")):
        tables = {
            "gpu": table(secs[(phase, "query-gpu (csv, what the exporter parses)")]),
            "apps": table(secs[(phase, "query-compute-apps (per-process)")]),
        }
        out = out_root / name / sub
        out.mkdir(parents=True, exist_ok=True)
        unknown = []
        for kind, (src, fields) in QUERIES.items():
            text, missing = answer(fields, aliases[src], *tables[src])
            path = out / f"{kind}.csv"
            if text is None:
                unknown.append(missing)
                path.unlink(missing_ok=True)
            else:
                path.write_text(text, encoding="utf-8")
        help_text = secs[("capabilities", "help-query-gpu")]
        (out / "help-query-gpu.txt").write_text(help_text + "\n", encoding="utf-8")
        header, rows = tables["gpu"]
        (out / "query-gpu-table.csv").write_text(
            ", ".join(name for name, _ in header) + "\n"
            + "".join(", ".join(nounits(v, u) for v, (_, u) in zip(row, header)) + "\n" for row in rows),
            encoding="utf-8")
        # -L and -q verbatim, as the driver prints them (the MIG join reads both)
        (out / "list.txt").write_text(secs[("capabilities", "list (-L)")] + "\n", encoding="utf-8")
        (out / "query.txt").write_text("\n" + secs[(phase, "query (-q)")] + "\n", encoding="utf-8")
        # --version verbatim: the driver's and CUDA's versions
        (out / "version.txt").write_text(secs[("capabilities", "version")] + "\n", encoding="utf-8")
        path = out / "unknown-fields"
        if unknown:
            path.write_text("".join(f + "\n" for f in unknown), encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
        print(f"{out.relative_to(REPO)}: unknown fields: {', '.join(unknown) or 'none'}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: derive.py CAPTURE_DIR (nvidia_gpu_exporter's internal/captures/)")
    src = Path(sys.argv[1])
    captures = sorted(src.glob("*.txt"))
    if not captures:
        sys.exit(f"derive.py: no captures in {src}")
    for capture in captures:
        derive(capture, HERE)


if __name__ == "__main__":
    main()
