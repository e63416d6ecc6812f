"""The table of bench/run: every figure of one run's outputs, as ranges over its rounds, and
the ratios against the peers measured in the same run.

    python3 bench/table.py OUT_DIR      # the folder bench/run wrote
"""
import re
import sys
from pathlib import Path

out = Path(sys.argv[1])


def text(name):
    path = out / name
    return path.read_text() if path.exists() else ""


def numbers(name, pattern):
    return [float(m) for m in re.findall(pattern, text(name))]


def load(name):
    """Per round: confirmations/s, server CPU ms/confirmation (all, and the first pid's), whole p50 ms."""
    body = text(f"{name}.txt")
    per_s = [float(x) for x in re.findall(r"= ([\d.]+) per second", body)]
    cpu = [float(x) for x in re.findall(r"server CPU: ([\d.]+) ms per confirmation", body)]
    first = [float(x) for x in re.findall(r"server CPU: [\d.]+ ms per confirmation, user \+ system \(pid \d+ ([\d.]+) ms", body)]
    p50 = [float(x) for x in re.findall(r"whole confirmation\s+([\d.]+)", body)]
    return {"per_s": per_s, "cpu": cpu, "mcp_cpu": first, "p50": p50}


def span(values, digits=2):
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if f"{low:.{digits}f}" == f"{high:.{digits}f}" else f"{low:.{digits}f}-{high:.{digits}f}"


def ratio(theirs, ours, inverse=False):
    """Worst and best ratio over the rounds' ranges (theirs / ours, or ours / theirs)."""
    if not theirs or not ours:
        return "-"
    if inverse:
        worst, best = max(ours) / min(theirs), min(ours) / max(theirs)
        return f"1/{1 / worst:.1f}" if abs(worst - best) < 1e-9 else f"1/{1 / worst:.1f}-1/{1 / best:.1f}"
    worst, best = min(theirs) / max(ours), max(theirs) / min(ours)
    return f"{worst:.1f}x" if abs(worst - best) < 1e-9 else f"{worst:.1f}-{best:.1f}x"


fern, py, ts, echo = load("fernhill"), load("python"), load("typescript"), load("echo")
rows = []
rows.append(("server CPU per confirmation, ms (API included)", span(py["cpu"]), span(fern["cpu"]),
             ratio(py["cpu"], fern["cpu"]), ">= 30x"))
rows.append(("confirmations per second, 1 replica", span(py["per_s"], 0), span(fern["per_s"], 0),
             ratio(fern["per_s"], py["per_s"]), ">= 30x"))
rows.append(("whole confirmation p50, ms", span(py["p50"]), span(fern["p50"]),
             ratio(py["p50"], fern["p50"], inverse=True), "<= 1/20"))

cold_f = numbers("coldstart-fernhill.txt", r"p50 ([\d.]+) ms")
cold_p = numbers("coldstart-python.txt", r"p50 ([\d.]+) ms")
mem_f = numbers("coldstart-fernhill.txt", r"peak memory: ([\d.]+) MiB")
mem_p = numbers("coldstart-python.txt", r"peak memory: ([\d.]+) MiB")
rows.append(("stdio cold start to the server/discover answer, ms", span(cold_p), span(cold_f),
             ratio(cold_p, cold_f), ">= 300x"))
rows.append(("stdio server peak memory for that, MiB", span(mem_p, 1), span(mem_f, 1),
             ratio(mem_p, mem_f, inverse=True), "<= 1/8"))
own_f = numbers("coldstart-fernhill.txt", r"of which its own \(heap and stacks\): ([\d.]+) MiB")
own_p = numbers("coldstart-python.txt", r"of which its own \(heap and stacks\): ([\d.]+) MiB")
rows.append(("  of which its own (heap and stacks, not shared program pages), MiB", span(own_p, 1), span(own_f, 1),
             ratio(own_p, own_f, inverse=True), "-"))


def criterion_us(label):
    """The middle estimate of a criterion line `label time: [a b c]`, in microseconds."""
    m = re.search(label + r"\s+time:\s+\[[\d.]+ \S+ ([\d.]+) (\S+)", text("seal-rust.txt"))
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2)
    return value * {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3}[unit]


seal_r, open_r = criterion_us("codec seal"), criterion_us("codec open")
seal_p = numbers("seal-python.txt", r"seal: ([\d.]+) us")
open_p = numbers("seal-python.txt", r"unseal: ([\d.]+) us")
if seal_r and open_r and seal_p and open_p:
    rows.append(("seal + open, us (criterion; Python: timeit)", f"{seal_p[0]:.2f} + {open_p[0]:.2f}",
                 f"{seal_r:.2f} + {open_r:.2f}", ratio([seal_p[0] + open_p[0]], [seal_r + open_r]), ">= 10x"))
rows.append(("server CPU per confirmation vs the TypeScript SDK v2, ms", span(ts["cpu"]), span(fern["cpu"]),
             ratio(ts["cpu"], fern["cpu"]), ">= 15x"))
rows.append(("MCP server CPU per confirmation vs the echo floor, ms (API apart)", span(echo["cpu"]),
             span(fern["mcp_cpu"]), ratio(fern["mcp_cpu"], echo["cpu"], inverse=False).replace("x", "x the floor"),
             "<= 1.5x the floor"))
rows.append(("whole confirmation p50 vs the echo floor, ms", span(echo["p50"]), span(fern["p50"]),
             ratio(fern["p50"], echo["p50"]).replace("x", "x the floor"), "<= 1.5x the floor"))

print()
print("| figure | peer (Python; TypeScript; the floor) | fernhill | ratio | target |")
print("|---|---|---|---|---|")
for row in rows:
    print("| " + " | ".join(row) + " |")
print()
print(f"TypeScript SDK v2 confirmations/s: {span(ts['per_s'], 0)}; the floor's: {span(echo['per_s'], 0)}")

small, large = load("scale-1k"), load("scale-large")
if small["cpu"] and large["cpu"]:
    print()
    print("| scale (fernhill, one server) | server CPU per confirmation, ms | confirmations/s | whole p50, ms |")
    print("|---|---|---|---|")
    for label, run in (("1,000 confirmations", small), ("the large run", large)):
        print(f"| {label} | {span(run['cpu'], 3)} | {span(run['per_s'], 0)} | {span(run['p50'])} |")
unanswered = text("scale-unanswered.txt")
if unanswered:
    print()
    print("Questions left unanswered (quotes and claims in Redis):")
    for line in unanswered.splitlines():
        if line.startswith(("confirmations:", "server CPU", "server memory")):
            print("  " + line)
    for line in text("scale-memory.txt").splitlines():
        print("  " + line)
