# Shared by bench/run and bench/ab (sourced).

# The shop's API always asks for a credential: every API a bench starts takes this one, and
# every server and load generator it starts shows it (they read SHOP_API_TOKEN).
export SHOP_API_TOKEN="${SHOP_API_TOKEN:-bench-service-credential-$$-$RANDOM}"

# Start a process that prints its URL as its first stdout line, its stderr going to LOG; sets
# $url and $pid. Fails the script if the process ends before it says its URL.
start_printing_url() {
  local log=$1; shift
  local said; said=$(mktemp "$(dirname "$log")/url.XXXXXX")
  "$@" >"$said" 2>>"$log" &
  pid=$!
  until [ -s "$said" ]; do
    kill -0 "$pid" 2>/dev/null || { echo "bench: $* exited; see $log" >&2; exit 1; }
    sleep 0.05
  done
  url=$(head -1 "$said")
}

# The MCP server beside a fernhill binary: its fernhill-mcp, or the binary itself for a build
# from before `fernhill serve` went.
server_of() { if [ -x "$(dirname "$1")/fernhill-mcp" ]; then echo "$(dirname "$1")/fernhill-mcp"; else echo "$1"; fi; }

# Wait until something listens on 127.0.0.1:$1, started as process $2 (logging to $3): at most
# ten seconds, and not past the process's end.
wait_for_port() {
  local port=$1 pid=$2 log=$3
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { echo "bench: process $pid ended before it listened on $port; see $log" >&2; exit 1; }
    sleep 0.05
  done
  echo "bench: nothing listened on $port within ten seconds; see $log" >&2; exit 1
}
