#!/usr/bin/env bash
# Measure the series prepared by fits/device_prepare.py on a lent GPU machine
# (MODEL.md §9), with CuPy alone: no pystencils, lbmpy or islpy needed there.
#
#   bash fits/device_measure.sh [PROGRAMS] [OUT]   (defaults: .measure_programs and $OUT)
#   bash fits/device_measure.sh --dry-run [PROGRAMS]   (no GPU: what each series would run)
#
# For each series folder of PROGRAMS (check, new, dev, in that order) it runs
#   python -m warpspeed.measure run --programs PROGRAMS/SERIES --jobs $JOBS ...
# into OUT/GPU-SERIES.csv (GPU: the driver's name without "NVIDIA ", e.g. H200),
# profiling --counter-blocks blocks of each plan with ncu (all 12 of check, 3 of
# each new plan, 1 of each dev plan). Everything printed goes to OUT/log.txt;
# nvidia-smi -q before and after (driver, CUDA, clocks, power) to
# OUT/smi-before.txt and OUT/smi-after.txt: six files in all.
#
# The whole run stays within BUDGET_S seconds (default 330): each series gets
# what is left, less 15 s for the last file, under `timeout`; a series cut
# short keeps the rows of every plan it finished (rows are appended per plan),
# and one that gets under 20 s is skipped with a line in the log.
#
# Environment: PYTHON (default python3), NCU (default ncu), JOBS (compile
# workers, default 14), BUDGET_S.
set -uo pipefail

DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
PROGRAMS=${1:-.measure_programs}
OUT_DIR=${2:-${OUT:-}}
PY=${PYTHON:-python3}
# ncu: on the PATH, else where CUDA and Nsight Compute install it
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu \
             2>/dev/null | head -n 1)}
NCU=${NCU:-ncu}
JOBS=${JOBS:-14}
BUDGET_S=${BUDGET_S:-330}
export PYTHONUNBUFFERED=1

counter_blocks() {  # blocks profiled per plan, by series
  case "$1" in check) echo 12 ;; probe) echo 8 ;; occupancy|lbm_sizes|drain|heldout|streams|lbm_parts|shifts|pitch|pitch2|r4probe|capacity) echo 99 ;; new) echo 3 ;; *) echo 1 ;; esac
}

if [ ! -d "$PROGRAMS" ]; then
  echo "device_measure: no programs folder $PROGRAMS (write it with python fits/device_prepare.py)" >&2
  exit 2
fi
SERIES=()
for s in check probe occupancy lbm_sizes drain heldout streams lbm_parts shifts pitch pitch2 r4probe capacity new dev; do [ -d "$PROGRAMS/$s" ] && SERIES+=("$s"); done
if [ ${#SERIES[@]} -eq 0 ]; then
  echo "device_measure: $PROGRAMS holds none of the series check, probe, occupancy, lbm_sizes, drain, heldout, streams, lbm_parts, shifts, pitch, pitch2, r4probe, capacity, new, dev" >&2
  exit 2
fi

if [ "$DRY" = 1 ]; then
  for s in "${SERIES[@]}"; do
    echo "== $s: $PY -m warpspeed.measure run --programs $PROGRAMS/$s --jobs $JOBS" \
         "--ncu $NCU --counter-blocks $(counter_blocks "$s") --out OUT/GPU-$s.csv"
    "$PY" -m warpspeed.measure run --programs "$PROGRAMS/$s" --ncu "$NCU" --dry-run \
      || exit $?
  done
  exit 0
fi

if [ -z "$OUT_DIR" ]; then
  echo "device_measure: give the output folder (second argument, or set OUT)" >&2
  exit 2
fi
mkdir -p "$OUT_DIR"
LOG="$OUT_DIR/log.txt"
START=$(date +%s)
log() { echo "$*" | tee -a "$LOG"; }

log "device_measure: $(date -u +%Y-%m-%dT%H:%M:%SZ), series ${SERIES[*]}, budget ${BUDGET_S} s"
nvidia-smi -q > "$OUT_DIR/smi-before.txt" 2>&1 || log "nvidia-smi -q failed"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 \
      | sed -e 's/^NVIDIA //' -e 's/ .*//' -e 's/[^A-Za-z0-9_.-]//g')
GPU=${GPU:-GPU}
{
  "$PY" -c 'import sys, cupy; print("python", sys.version.split()[0]); print("cupy", cupy.__version__); cupy.show_config()' 2>&1
  "$NCU" --version 2>&1 | tail -n 1
  nproc
} | tee -a "$LOG"

for s in "${SERIES[@]}"; do
  LEFT=$(( START + BUDGET_S - 15 - $(date +%s) ))
  if [ "$LEFT" -lt 20 ]; then
    log "== $s: skipped, ${LEFT} s of the budget left"
    continue
  fi
  log "== $s: at most ${LEFT} s"
  T0=$(date +%s)
  timeout --signal=TERM "$LEFT" "$PY" -m warpspeed.measure run --programs "$PROGRAMS/$s" \
    --out "$OUT_DIR/$GPU-$s.csv" --jobs "$JOBS" --ncu "$NCU" \
    --counter-blocks "$(counter_blocks "$s")" 2>&1 | tee -a "$LOG"
  RC=${PIPESTATUS[0]}
  log "== $s: exit $RC after $(( $(date +%s) - T0 )) s"
done

nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE > "$OUT_DIR/smi-after.txt" 2>&1 \
  || log "nvidia-smi -q (after) failed"
log "device_measure: done after $(( $(date +%s) - START )) s"
