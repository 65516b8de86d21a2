#!/usr/bin/env bash
# What one Kubernetes trial costs the tuner in kubectl time, against the
# loopback fake API server (tests/k8s/fake_apiserver.py): the latency of the
# calls the backend makes (the poll `get jobs,pods -o json`, `create -f -`,
# foreground `delete --wait`, `auth can-i`) and a 2-worker trivial Job from
# create to Complete. A real API server adds network and etcd time; the
# client-side cost (kubectl start-up, discovery from cache, validation) is
# the same.
#   bench/k8s_overhead.sh [N]
set -euo pipefail
n=${1:-20}
src=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'kill $srv 2>/dev/null || true; rm -rf "$dir"' EXIT
python3 "$src/tests/k8s/fake_apiserver.py" --kubeconfig "$dir/kc.json" \
  --openapi "$src/tests/k8s/openapi/definitions.json" --work-dir "$dir/pods" --lifetime 600 >/dev/null &
srv=$!
for _ in $(seq 100); do [ -f "$dir/kc.json" ] && break; sleep 0.05; done
export KUBECONFIG="$dir/kc.json" KUBECACHEDIR="$dir/cache"
k() { kubectl --namespace=default "$@"; }
ms() { python3 -c "import sys; print('%.0f' % ((float(sys.argv[2]) - float(sys.argv[1])) * 1000 / float(sys.argv[3])))" "$@"; }

job() {  # a 2-worker Indexed Job whose pods exit at once, as JSON
  cat <<JSON
{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"$1","labels":{"tune.io/experiment":"bench"}},
 "spec":{"completionMode":"Indexed","completions":2,"parallelism":2,"backoffLimit":0,
  "template":{"metadata":{"labels":{"tune.io/experiment":"bench"}},"spec":{"restartPolicy":"Never",
   "containers":[{"name":"trial","image":"x","command":["true"]}]}}}}
JSON
}

k get --raw /version >/dev/null  # warm the discovery cache
t0=$(date +%s.%N); for _ in $(seq "$n"); do k get jobs,pods -l tune.io/experiment=bench -o json >/dev/null; done
t1=$(date +%s.%N); for _ in $(seq "$n"); do k auth can-i get pods --subresource=log >/dev/null; done
t2=$(date +%s.%N); for i in $(seq "$n"); do job "b$i" | k create -f - -o name >/dev/null; done
t3=$(date +%s.%N); for i in $(seq "$n"); do k wait --for=condition=Complete "job/b$i" --timeout=60s >/dev/null; done
t4=$(date +%s.%N); for i in $(seq "$n"); do k delete "job/b$i" --cascade=foreground --wait >/dev/null; done
t5=$(date +%s.%N)
echo "kubectl get jobs,pods -o json (poll)   $(ms "$t0" "$t1" "$n") ms/call"
echo "kubectl auth can-i                     $(ms "$t1" "$t2" "$n") ms/call"
echo "kubectl create -f - (validated Job)    $(ms "$t2" "$t3" "$n") ms/call"
echo "create -> Complete (2 pods), waited    $(ms "$t3" "$t4" "$n") ms/job after create"
echo "kubectl delete --cascade=foreground    $(ms "$t4" "$t5" "$n") ms/call"
