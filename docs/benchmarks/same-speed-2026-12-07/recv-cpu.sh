#!/bin/bash
# receiver CPU (user+sys) for C over tcp, interleaved rounds: cpu1.sh ROUNDS BIN...
rounds=$1; shift
cd /dev/shm/cst
for r in $(seq $rounds); do for bin in "$@"; do
 rm -rf dl cfg-r cfg-s; mkdir dl
 /usr/bin/time -f "%U %S" -o rt.txt $bin receive --config cfg-r --dir dl --listen 127.0.0.1:0 --accept all --once --no-discovery --localsend=false --name R > recv.out 2>&1 &
 for _ in $(seq 500); do grep -q '^listening' recv.out 2>/dev/null && break; sleep 0.01; done
 addr=$(grep -o 'tcp=[^ ]*' recv.out | cut -d= -f2)
 /usr/bin/time -f "%U %S" -o st.txt $bin send --config cfg-s --to $addr --transport tcp src/C >/dev/null 2>&1
 wait
 echo "$(basename $bin) $(awk '{print $1+$2}' rt.txt) $(awk '{print $1+$2}' st.txt)"
done; done
