#!/bin/bash
# The second soak of docs/benchmarks/soak.md: what the first left out. Three
# long-lived processes on loopback, each driven by fresh clients, sampled every
# STEP rounds:
#   rx     `ferry-cli receive --accept all --anywhere --relay` (with a `ferry-cli
#          relay` of its own) answering pairings from fresh `ferry-cli pair`
#          processes: accepted, refused by the receiver, codes said not to match
#          by the other side, abandoned half-way (the pairing process killed while
#          both ask), by 5 devices paired in the first rounds, and a device new to
#          it every 10 rounds (accepted, or refused unread while the receiver
#          mutes new devices at 127.0.0.1 for 2 minutes after a decline);
#   up     `ferry-cli receive --link`: files uploaded through the link from fresh
#          curl clients with tus (POST, PATCH), uploads abandoned half-way,
#          cancelled (DELETE), and one cut mid-request;
#   share  `ferry-cli share --pin` of a folder: the PIN typed by each fresh client
#          (a new session), files downloaded whole, by range, cut mid-way, and
#          the folder's zip.
# The receiver's goroutines and live heap come from its own heap profile at
# SIGUSR1 (FERRY_HEAPPROFILE), RSS and open files from /proc/PID, and the
# config folders' files and bytes from find/du. (Sends through the relay need
# ICE candidates on loopback, which only tests turn on: the in-process soak of
# those is TestManySendsThroughTheRelayLeaveTheReceiverAsItWas.)
#
#   docs/benchmarks/soak-beyond.sh FERRY_CLI WORKDIR [N [STEP [PORT]]]
set -u
LIB=$(dirname "$(realpath "$0")")/soak-lib.sh
trap "" PIPE # a pairing process gone before its answer is written
F=$(realpath "$1"); W=$2; N=${3:-300}; STEP=${4:-50}; PORT=${5:-48163}
mkdir -p "$W" && cd "$W" || exit 1
mkdir -p prof dl-rx dl-up src/share/sub relaycfg
for i in 1 2 3; do [ -f src/share/s$i.bin ] || head -c $((200000 * i)) /dev/urandom > src/share/s$i.bin; done
echo hi > src/share/sub/a.txt
[ -f src/up.bin ] || head -c 300000 /dev/urandom > src/up.bin
[ -f relay.secret ] || { head -c 24 /dev/urandom | base64 > relay.secret; chmod 600 relay.secret; }
RELAY=127.0.0.1:$PORT RX=127.0.0.1:$((PORT + 1)) UP=127.0.0.1:$((PORT + 2)) SH=127.0.0.1:$((PORT + 3))
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; exec 3>&-' EXIT
FERRY_HEAPPROFILE=$PWD/prof/relay "$F" relay --config relaycfg --listen $RELAY --secret-file relay.secret > relay.log 2>&1 &
PIDS+=($!); RELAYPID=$!
until grep -q 'relay listening' relay.log; do sleep 0.1; done
rm -f rx.in; mkfifo rx.in; exec 3<> rx.in
FERRY_HEAPPROFILE=$PWD/prof/rx "$F" receive --accept all --config rxcfg --dir dl-rx --listen $RX --no-discovery \
	--localsend=false --anywhere --relay $RELAY --relay-secret-file relay.secret --name soakrx <&3 > rx.log 2>&1 &
PIDS+=($!); RXPID=$!
FERRY_HEAPPROFILE=$PWD/prof/up "$F" receive --link --expire 240h --config upcfg --dir dl-up --listen $UP \
	--no-discovery --localsend=false --name soakup > up.log 2>&1 &
PIDS+=($!); UPPID=$!
FERRY_HEAPPROFILE=$PWD/prof/share "$F" share --pin 4711 --expire 240h --config sharecfg --listen $SH src/share > share.log 2>&1 &
PIDS+=($!); SHPID=$!
until grep -q 'reachable from anywhere' rx.log; do sleep 0.1; done
until grep -qo 'http://[^ ]*' up.log; do sleep 0.1; done
until grep -qo 'http://[^ ]*' share.log; do sleep 0.1; done
UPURL=$(grep -o 'http://[^ ]*' up.log | head -1); SHURL=$(grep -o 'http://[^ ]*' share.log | head -1)
asked=0
# pair NAME RXANSWER PAIRANSWER: both answers y, n, or k (kill the pairing
# process while both ask).
pair() {
	local cfg=$1 rxa=$2 pa=$3 p
	rm -f p.in; mkfifo p.in
	"$F" pair --config "$cfg" --to $RX --name "$(basename "$cfg")" < p.in > pair.out 2>&1 & p=$!
	exec 4> p.in
	local n=0
	for _ in $(seq 300); do
		n=$(grep -o 'asks to pair, with' rx.log | wc -l)
		[ "$n" -gt $asked ] && grep -q 'same code' pair.out && break
		kill -0 $p 2>/dev/null || break # refused unread (muted), or it failed
		sleep 0.05
	done
	if [ "$n" -le $asked ]; then # the receiver did not ask: nothing to answer there
		rxa=
	fi
	asked=$n
	if [ "$pa" = k ]; then
		kill -9 $p
	else
		[ -n "$rxa" ] && echo "$rxa" >&3
		echo "$pa" >&4
	fi
	exec 4>&-
	wait $p 2>/dev/null
	cat pair.out >> pair.log
}
upload() { # upload NAME CUT: tus POST, then PATCH all (CUT=all), half and leave (half), half then DELETE (del), or cut mid-request (cut)
	local name=$1 how=$2 loc size=300000
	loc=$(curl -s -i -X POST "${UPURL}tus/" -H 'Tus-Resumable: 1.0.0' -H "Upload-Length: $size" \
		-H "Upload-Metadata: filename $(printf %s "$name" | base64 -w0)" | tr -d '\r' | awk 'tolower($1)=="location:"{print $2}')
	[ -n "$loc" ] || { echo "no upload for $name" >> up.err; return; }
	case $loc in http*) ;; *) loc="http://$UP$loc" ;; esac
	case $how in
	all) curl -s -o /dev/null -X PATCH "$loc" -H 'Tus-Resumable: 1.0.0' -H 'Upload-Offset: 0' \
		-H 'Content-Type: application/offset+octet-stream' --data-binary @src/up.bin ;;
	half | del) head -c 150000 src/up.bin | curl -s -o /dev/null -X PATCH "$loc" -H 'Tus-Resumable: 1.0.0' -H 'Upload-Offset: 0' \
		-H 'Content-Type: application/offset+octet-stream' --data-binary @-
		[ "$how" = del ] && curl -s -o /dev/null -X DELETE "$loc" -H 'Tus-Resumable: 1.0.0' ;;
	cut) (head -c 100000 src/up.bin; sleep 0.3) | timeout 0.2 curl -s -o /dev/null -X PATCH "$loc" -H 'Tus-Resumable: 1.0.0' \
		-H 'Upload-Offset: 0' -H 'Content-Type: application/offset+octet-stream' -H "Content-Length: $size" -T - ;;
	esac
}
download() { # download I: a fresh client types the PIN, then fetches
	local jar=cookies.txt
	rm -f $jar
	curl -s -o /dev/null -c $jar -b $jar "$SHURL"
	curl -s -o /dev/null -c $jar -b $jar -X POST --data-urlencode pin=4711 "${SHURL}pin"
	case $(($1 % 4)) in
	0) curl -s -o /dev/null -b $jar "${SHURL}f/0/s1.bin" ;;
	1) curl -s -o /dev/null -b $jar -r 1000-99999 "${SHURL}f/1/s2.bin" ;;
	2) curl -s -o /dev/null -b $jar --max-time 0.05 --limit-rate 500k "${SHURL}f/2/s3.bin" ;;
	3) curl -s -o /dev/null -b $jar "${SHURL}all.zip" ;;
	esac
}
. "$LIB"
sample() {
	local line="$1" n p d
	for n in rx up share relay; do
		case $n in rx) p=$RXPID d=rxcfg ;; up) p=$UPPID d=upcfg ;; share) p=$SHPID d=sharecfg ;; relay) p=$RELAYPID d=relaycfg ;; esac
		line="$line $(profile $n $p $1 | tr ' ' /)/$(awk '/VmRSS/{print $2}' /proc/$p/status)/$(ls /proc/$p/fd | wc -l)/$(find $d -type f | wc -l)/$(du -sk $d | cut -f1)"
	done
	echo "$line $(find dl-up -name '*.partial' | wc -l) $(find dl-up -type f | wc -l)" >> samples.txt
}
echo "rounds rx:goroutines/heapKB/rssKB/fds/cfgfiles/cfgKB up:... share:... relay:... up-partials up-files" > samples.txt
sample 0
for i in $(seq 1 "$N"); do
	c=p$((i % 5)); [ $((i % 10)) -eq 0 ] && c=fresh/p$i
	case $(( i <= 5 || i % 10 == 0 ? 0 : i % 4 )) in
	0) pair $c y y ;;
	1) pair $c n y ;;
	2) pair $c y n ;;
	3) pair $c k k ;;
	esac
	case $((i % 4)) in 0) upload u$i.bin all ;; 1) upload u$i.bin half ;; 2) upload u$i.bin del ;; 3) upload u$i.bin cut ;; esac
	upload v$i.bin all
	download $i; download $((i + 1))
	echo "$i $(date +%T)" >> rounds.log
	[ $((i % STEP)) -eq 0 ] && sample "$i"
done
