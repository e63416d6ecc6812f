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


def multiple(larger, smaller):
    """How many times `larger` is `smaller`, worst and best over the rounds ("-" where a figure is not above zero)."""
    if not larger or not smaller or min(smaller) <= 0:
        return "-"
    low, high = min(larger) / max(smaller), max(larger) / min(smaller)
    return f"{low:.1f}x" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}x"


def at_least(theirs, ours, times):
    """ours is `times` better than theirs (a cost: theirs / ours); the range, the target, met."""
    if not theirs or not ours:
        return "-", f">= {times}x", "-"
    worst, best = min(theirs) / max(ours), max(theirs) / min(ours)
    return f"{worst:.1f}-{best:.1f}x", f">= {times}x", "met" if worst >= times else "missed"


def faster(theirs, ours, times):
    """ours is a rate `times` higher than theirs."""
    return at_least(ours, theirs, times)


def within(floor, ours, times):
    """ours costs at most `times` the floor."""
    if not floor or not ours:
        return "-", f"<= {times}x the floor", "-"
    best, worst = min(ours) / max(floor), max(ours) / min(floor)
    return f"{best:.1f}-{worst:.1f}x the floor", f"<= {times}x the floor", "met" if worst <= times else "missed"


def fraction(theirs, ours, denominator):
    """ours is at most 1/denominator of theirs."""
    if not theirs or not ours:
        return "-", f"<= 1/{denominator}", "-"
    worst, best = max(ours) / min(theirs), min(ours) / max(theirs)
    return f"1/{1 / worst:.1f}-1/{1 / best:.1f}", f"<= 1/{denominator}", "met" if worst <= 1 / denominator else "missed"


def untargeted(text):
    return text, "-", "-"


fern, py, ts = load("fernhill"), load("python"), load("typescript")
echo, floor = load("echo"), load("floor")
rows = []
rows.append(("server CPU per confirmation, ms (API included)", span(py["cpu"]), span(fern["cpu"]),
             *at_least(py["cpu"], fern["cpu"], 20)))
rows.append(("server CPU per confirmation vs the TypeScript SDK v2, ms", span(ts["cpu"]), span(fern["cpu"]),
             *at_least(ts["cpu"], fern["cpu"], 10)))
api_share = [(all_ - mcp) / all_ for all_, mcp in zip(fern["cpu"], fern["mcp_cpu"]) if all_ > 0]
rows.append(("the shop's API's share of fernhill's CPU per confirmation", "-", span(api_share),
             span(api_share), "<= 0.25", ("met" if max(api_share) <= 0.25 else "missed") if api_share else "-"))
rows.append(("MCP server CPU per confirmation vs the architecture's floor, ms (API apart)", span(floor["mcp_cpu"]),
             span(fern["mcp_cpu"]), *within(floor["mcp_cpu"], fern["mcp_cpu"], 1.5)))
rows.append(("confirmations per second, 1 replica", span(py["per_s"], 0), span(fern["per_s"], 0),
             *untargeted(faster(py["per_s"], fern["per_s"], 0)[0])))
rows.append(("whole confirmation p50, ms", span(py["p50"]), span(fern["p50"]),
             *untargeted(ratio(py["p50"], fern["p50"], inverse=True))))

exit_f = numbers("coldstart-fernhill.txt", r"start to exit after the answer: p50 ([\d.]+) ms")
exit_p = numbers("coldstart-python.txt", r"start to exit after the answer: p50 ([\d.]+) ms")
mem_f = numbers("coldstart-fernhill.txt", r"peak memory: ([\d.]+) MiB")
mem_p = numbers("coldstart-python.txt", r"peak memory: ([\d.]+) MiB")
rows.append(("stdio process, start to exit after one answer, ms", span(exit_p), span(exit_f),
             *at_least(exit_p, exit_f, 300)))
rows.append(("stdio process peak memory, MiB", span(mem_p, 1), span(mem_f, 1), *fraction(mem_p, mem_f, 6)))
own_f = numbers("coldstart-fernhill.txt", r"of which its own \(heap and stacks\): ([\d.]+) MiB")
own_p = numbers("coldstart-python.txt", r"of which its own \(heap and stacks\): ([\d.]+) MiB")
rows.append(("  of which its own (heap and stacks, not shared program pages), MiB", span(own_p, 1), span(own_f, 1),
             *untargeted(ratio(own_p, own_f, inverse=True))))
hello_exit = numbers("coldstart-hello.txt", r"start to exit: p50 ([\d.]+) ms")
hello_mem = numbers("coldstart-hello.txt", r"peak memory: ([\d.]+) MiB")
if hello_exit:
    rows.append(("  beside a Rust hello world: start to exit, ms; peak memory, MiB",
                 f"{span(hello_exit)}; {span(hello_mem, 1)}", f"{span(exit_f)}; {span(mem_f, 1)}",
                 *untargeted(f"{ratio(exit_f, hello_exit).replace('x', '')}x; {ratio(mem_f, hello_mem).replace('x', '')}x")))


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
                 f"{seal_r:.2f} + {open_r:.2f}", *untargeted(ratio([seal_p[0] + open_p[0]], [seal_r + open_r]))))
rows.append(("MCP server CPU per confirmation vs the bare HTTP+JSON echo, ms", span(echo["cpu"]),
             span(fern["mcp_cpu"]), *untargeted(within(echo["cpu"], fern["mcp_cpu"], 0)[0])))
rows.append(("whole confirmation p50 vs the architecture's floor, ms", span(floor["p50"]), span(fern["p50"]),
             *untargeted(within(floor["p50"], fern["p50"], 0)[0])))

print()
print("| figure | peer (Python; TypeScript; the floor) | fernhill | ratio | target | met |")
print("|---|---|---|---|---|---|")
for row in rows:
    print("| " + " | ".join(row) + " |")
print()
print(f"TypeScript SDK v2 confirmations/s: {span(ts['per_s'], 0)}; the architecture's floor's: "
      f"{span(floor['per_s'], 0)}; the bare echo's: {span(echo['per_s'], 0)}")
print(f"the architecture's floor's API CPU per confirmation, ms: {span([c - m for c, m in zip(floor['cpu'], floor['mcp_cpu'])])}"
      f"; fernhill's API: {span([c - m for c, m in zip(fern['cpu'], fern['mcp_cpu'])])}")

databases = {db: load(f"db-{db}") for db in ("memory", "file", "postgres")}
if any(d["cpu"] for d in databases.values()):
    api = {db: [c - m for c, m in zip(d["cpu"], d["mcp_cpu"])] for db, d in databases.items()}
    server = numbers("db-postgres.txt", r"PostgreSQL CPU: ([\d.]+) ms a confirmation")
    print()
    print("| the shop's API on | API CPU per confirmation, ms | vs SQLite in memory | database server CPU, ms | confirmations/s |")
    print("|---|---|---|---|---|")
    for db, label in (("memory", "SQLite, in memory"), ("file", "SQLite, a file"), ("postgres", "PostgreSQL")):
        mem = api["memory"]
        ratio_to_memory = (f"{min(api[db]) / max(mem):.1f}-{max(api[db]) / min(mem):.1f}x"
                           if db != "memory" and api[db] and mem and min(mem) > 0 else "-")
        print(f"| {label} | {span(api[db])} | {ratio_to_memory} | {span(server) if db == 'postgres' else '-'} | "
              f"{span(databases[db]['per_s'], 0)} |")

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

tasks = text("tasks.txt")
if tasks:
    get = numbers("tasks.txt", r"tasks/get: ([\d.]+) ms server CPU")
    lookup = numbers("tasks.txt", r"lookup_order: ([\d.]+) ms server CPU")
    update = numbers("tasks.txt", r"tasks/update: ([\d.]+) ms server CPU")
    record = numbers("tasks.txt", r"redis: (\d+) bytes per waiting task's record")
    kept = numbers("tasks.txt", r"record, (\d+) bytes with its key")
    resident = numbers("tasks.txt", r"\((\d+) bytes per waiting task\)")
    print()
    print("| tasks (fernhill, one server, Redis store) | beside | fernhill | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    if get and lookup:
        worst = max(get) / min(lookup)
        print(f"| server CPU per tasks/get, ms, beside a lookup_order | {span(lookup, 3)} | {span(get, 3)} "
              f"| {worst:.2f}x the lookup | <= 1x | {'met' if worst <= 1 else 'missed'} |")
    if update:
        print(f"| server CPU per tasks/update (it releases the refund), ms | {span(lookup, 3)} | {span(update, 3)} | - | - | - |")
    if kept:
        print(f"| bytes per waiting task in Redis (its record; with its key) | - | {span(record, 0)}; {span(kept, 0)} "
              f"| - | < 1 KiB | {'met' if max(kept) < 1024 else 'missed'} |")
    if resident:
        print(f"| server resident memory per waiting task, bytes | - | {span(resident, 0)} | - | 0 | "
              f"{'met' if max(resident) < 64 else 'missed'} |")

direct, through = text("gate-direct.txt"), text("gate-through.txt")
if direct and through:
    # A confirmation is three calls; each round's direct and gated runs are on the same server.
    calls = ("quote_refund", "issue_refund, asks", "issue_refund, retry")
    cpu_direct, cpu_through = load("gate-direct")["cpu"], load("gate-through")["cpu"]
    gate_cpu = numbers("gate-through.txt", r"server CPU: [\d.]+ ms per confirmation, user \+ system \(pid \d+ ([\d.]+) ms")
    added_cpu = [(t - d) / len(calls) for d, t in zip(cpu_direct, cpu_through)]

    def p50s(body):
        rounds = [[float(x) for x in re.findall(rf"^{re.escape(call)}\s+([\d.]+)", body, re.M)] for call in calls]
        return [sum(values) / len(values) for values in zip(*rounds)]

    added_p50 = [t - d for d, t in zip(p50s(direct), p50s(through))]
    direct_alone, through_alone = text("gate-direct-alone.txt"), text("gate-through-alone.txt")
    added_alone = [t - d for d, t in zip(p50s(direct_alone), p50s(through_alone))] if direct_alone and through_alone else []
    print()
    print("| the gate (an ungated call through it, against the same call made directly) | direct | through the gate | added | target | met |")
    print("|---|---|---|---|---|---|")
    print(f"| server CPU per call, ms (the gate, the server and the API) | {span([c / 3 for c in cpu_direct], 3)} "
          f"| {span([c / 3 for c in cpu_through], 3)} | {span(added_cpu, 3)} | <= 0.1 | "
          f"{('met' if max(added_cpu) <= 0.1 else 'missed') if added_cpu else '-'} |")
    print(f"| of it, the gate's own, ms | - | {span([c / 3 for c in gate_cpu], 3)} | - | - | - |")
    if added_alone:
        print(f"| a call's p50, one lead alone, ms (the mean of a confirmation's three) | {span(p50s(direct_alone))} "
              f"| {span(p50s(through_alone))} | {span(added_alone)} | <= 0.3 | {'met' if max(added_alone) <= 0.3 else 'missed'} |")
    print(f"| a call's p50, all leads at once (queueing on a saturated machine), ms | {span(p50s(direct))} "
          f"| {span(p50s(through))} | {span(added_p50)} | - | - |")
    # The same call through HAProxy on one thread: what any process in between adds.
    haproxy, haproxy_alone = text("gate-haproxy.txt"), text("gate-haproxy-alone.txt")
    if haproxy and haproxy_alone:
        cpu_haproxy = load("gate-haproxy")["cpu"]
        haproxy_own = numbers("gate-haproxy.txt", r"server CPU: [\d.]+ ms per confirmation, user \+ system \(pid \d+ ([\d.]+) ms")
        added_haproxy = [(t - d) / len(calls) for d, t in zip(cpu_direct, cpu_haproxy)]
        alone_haproxy = [t - d for d, t in zip(p50s(direct_alone), p50s(haproxy_alone))]
        print()
        print("| the floor: the same call through HAProxy on one thread (HTTP read, MCP not) | direct | through HAProxy "
              "| added | the gate's added, as a multiple |")
        print("|---|---|---|---|---|")
        print(f"| server CPU per call, ms | {span([c / 3 for c in cpu_direct], 3)} | {span([c / 3 for c in cpu_haproxy], 3)} "
              f"| {span(added_haproxy, 3)} | {multiple(added_cpu, added_haproxy)} |")
        print(f"| of it, the proxy's own, ms | - | {span([c / 3 for c in haproxy_own], 3)} | - "
              f"| {multiple(gate_cpu, haproxy_own)} |")
        print(f"| a call's p50, one lead alone, ms | {span(p50s(direct_alone))} | {span(p50s(haproxy_alone))} "
              f"| {span(alone_haproxy)} | {multiple(added_alone, alone_haproxy)} |")

held = numbers("gate-held.txt", r"calls in [\d.]+ s, ([\d.]+) a second")
held_cpu = numbers("gate-held.txt", r"the gate's CPU ([\d.]+) ms a call")
if held:
    print()
    print("| the gate, a held call decided and run (hold, review_approvals, run; SQLite) | figure | target | met |")
    print("|---|---|---|---|")
    print(f"| held, decided and run, per second, one gate | {span(held, 0)} | >= 500 | {'met' if min(held) >= 500 else 'missed'} |")
    print(f"| the gate's CPU per held call (its four requests: hold, review_approvals and its round, run), ms "
          f"| {span(held_cpu, 3)} | - | - |")
    held_pg = numbers("gate-held-postgres.txt", r"calls in [\d.]+ s, ([\d.]+) a second")
    held_pg_cpu = numbers("gate-held-postgres.txt", r"the gate's CPU ([\d.]+) ms a call")
    if held_pg:
        print(f"| held, decided and run, per second, one gate, its held calls in PostgreSQL | {span(held_pg, 0)} | >= 500 "
              f"| {'met' if min(held_pg) >= 500 else 'missed'} |")
        print(f"| the gate's CPU per held call, PostgreSQL, ms | {span(held_pg_cpu, 3)} | - | - |")
