# Shared by the soak scripts (soak-beyond.sh, soak-relay.sh), sourced from the
# soak's work folder, where prof/NAME is the heap profile FERRY_HEAPPROFILE names.
#
# profile NAME PID ROUND: the goroutines and live heap (KiB) of a process's own
# heap profile, which it writes at SIGUSR1; the profile is kept as
# prof/NAME-ROUND.pprof.
profile() {
	local before after
	before=$(md5sum prof/$1.json 2>/dev/null)
	kill -USR1 $2
	for _ in $(seq 100); do sleep 0.1; after=$(md5sum prof/$1.json 2>/dev/null); [ "$after" != "$before" ] && break; done
	cp prof/$1 prof/$1-$3.pprof 2>/dev/null
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["Goroutines"], d["LiveHeap"]>>10)' prof/$1.json
}
