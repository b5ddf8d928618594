#!/usr/bin/env bash
# Real third-party programs (Debian's python3, sqlite3, jq, xmllint) produce
# byte-identical output and exit status with and without the library
# preloaded, alone and stacked in front of jemalloc and tcmalloc, and are
# really counted meanwhile.
# Usage: programs.sh LIBMSTATSHM MSTAT_RUN
set -euo pipefail
. "$(dirname "$0")/../shell.sh"
lib=$1 run=$2

cat >"$tmp/work.py" <<'PY'
import json, threading, collections
d = {str(i): [i] * (i % 17) for i in range(20000)}
words = collections.Counter(str(i * 7919 % 1000) for i in range(100000))
out = []
def worker(k):
    out.append(sum(len(json.dumps(d[str(j)])) for j in range(k, 20000, 4)))
ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sorted(out), words.most_common(3), len(json.dumps(d)))
PY
cat >"$tmp/work.sql" <<'SQL'
create table t(k integer primary key, v text);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
insert into t select i, printf('%08d-%s', i * 7919 % 100003, hex('v' || i)) from n;
create index tv on t(v);
select count(*), min(v), max(v), sum(length(v)) from t;
select substr(v, 1, 3) s, count(*) from t group by s order by s limit 5;
SQL
python3 -c 'import json; print(json.dumps([{"k": i, "v": i * 7919 % 1000, "s": "x" * (i % 50)} for i in range(20000)]))' >"$tmp/in.json"
python3 -c '
print("<root>")
for i in range(5000): print("<item id=\"%d\"><v>%d</v><s>%s</s></item>" % (i, i * 7919 % 1000, "y" * (i % 30)))
print("</root>")' >"$tmp/in.xml"

cmds=(
	"/usr/bin/python3 $tmp/work.py"
	"sqlite3 :memory: .read $tmp/work.sql"
	"jq -S -c [.[]|select(.v%3==0)]|length,(map(.v)|add),(group_by(.v%7)|map(length)) $tmp/in.json"
	"xmllint --format $tmp/in.xml"
	"xmllint --xpath count(//item[v>500]) $tmp/in.xml"
)
for next in "" libjemalloc.so.2 libtcmalloc_minimal.so.4; do
	for c in "${cmds[@]}"; do
		read -r -a argv <<<"$c"
		if [ "${argv[0]}" = sqlite3 ]; then argv=(sqlite3 :memory: ".read $tmp/work.sql"); fi
		rc0=0 rc1=0
		LD_PRELOAD="$next" "${argv[@]}" >"$tmp/out0" 2>"$tmp/err0" || rc0=$?
		LD_PRELOAD="$lib${next:+ $next}" "${argv[@]}" >"$tmp/out1" 2>"$tmp/err1" || rc1=$?
		[ "$rc0" = 0 ] || fail "$c (${next:-glibc}) fails on its own: $(cat "$tmp/err0")"
		[ "$rc1" = "$rc0" ] || fail "$c (${next:-glibc}): exit $rc1 preloaded, $rc0 without"
		cmp -s "$tmp/out0" "$tmp/out1" || fail "$c (${next:-glibc}): output differs"
		cmp -s "$tmp/err0" "$tmp/err1" || fail "$c (${next:-glibc}): stderr differs: $(cat "$tmp/err1")"
		[ -s "$tmp/out0" ] || fail "$c: no output"
	done
done

# Counted, not just run: many allocations, every class's frees <= allocs.
for c in "${cmds[@]}"; do
	read -r -a argv <<<"$c"
	if [ "${argv[0]}" = sqlite3 ]; then argv=(sqlite3 :memory: ".read $tmp/work.sql"); fi
	"$run" --summary "$tmp/s.json" -- "${argv[@]}" >/dev/null
	python3 - "$tmp/s.json" "$c" <<'PY' || fail "$c: summary"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["process"]
assert s["counted"] and p["alloc_count"] > 1000, (sys.argv[2], p)
for c in p["classes"]:
    assert c["free_count"] <= c["alloc_count"] and c["free_bytes"] <= c["alloc_bytes"], c
PY
done
echo ok
