#!/usr/bin/env bash
# The app in a real X window, as a person meets it: `make smoke` (not part of `make test`).
#
# Starts a virtual X server (Xvfb), opens the app with the bundled cameraman, loads the sample
# with its strokes from the Samples menu, zooms with the mouse wheel, paints a stroke with the
# mouse, runs, exports the labels through the File menu's dialog, and saves a screenshot after
# each step in out/smoke/ (look at them). Exits non-zero if the window never appears, the run
# does not finish or the export is not written.
#
# Needs (Debian/Ubuntu): sudo apt-get install xvfb xdotool imagemagick libxcb-cursor0 \
#     libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0
# Overrides: OUT (default out/smoke), SMOKE_DISPLAY (default :97), SEGAPP (default .venv/bin/segapp)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/smoke}
DISP=${SMOKE_DISPLAY:-:97}
SEGAPP=${SEGAPP:-.venv/bin/segapp}
for tool in Xvfb xdotool import; do
    command -v "$tool" > /dev/null || {
        echo "smoke: '$tool' is missing; on Debian/Ubuntu: sudo apt-get install xvfb xdotool" \
             "imagemagick" >&2
        exit 2
    }
done
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/smoke.log"

Xvfb "$DISP" -screen 0 1600x1000x24 -nolisten tcp > "$OUT/xvfb.log" 2>&1 &
XVFB=$!
APP=
cleanup() {
    [ -n "$APP" ] && kill "$APP" 2> /dev/null || true
    kill "$XVFB" 2> /dev/null || true
}
trap cleanup EXIT
export DISPLAY=$DISP
unset QT_QPA_PLATFORM
for _ in $(seq 50); do xdotool getmouselocation > /dev/null 2>&1 && break; sleep 0.1; done

step=0
shot() {  # shot NAME: a numbered screenshot of the whole screen
    step=$((step + 1))
    import -window root "$OUT/$(printf %02d "$step")-$1.png"
    echo "screenshot $(printf %02d "$step")-$1.png" >> "$LOG"
}
say() { echo "smoke: $*" | tee -a "$LOG"; }
fail() { say "FAILED: $*"; shot failed; exit 1; }

"$SEGAPP" segapp/assets/cameraman.png > "$OUT/app.log" 2>&1 &
APP=$!
WIN=$(timeout 60 xdotool search --sync --name "segapp" | head -1) || fail "no window in 60 s"
sleep 2
eval "$(xdotool getwindowgeometry --shell "$WIN")"  # X, Y, WIDTH, HEIGHT
say "window $WIDTH x $HEIGHT at $X,$Y"
shot opened

# the first sample, with its example strokes, from the Samples menu (Alt+S, then Enter)
xdotool windowactivate --sync "$WIN" 2> /dev/null || xdotool windowfocus "$WIN"
xdotool key --window "$WIN" alt+s
sleep 0.5
shot samples-menu
xdotool key Return
sleep 1.5
shot sample-loaded

# the canvas fills the middle of the window: zoom in three wheel steps there, then fit again
CX=$((X + WIDTH * 45 / 100))
CY=$((Y + HEIGHT / 2))
xdotool mousemove "$CX" "$CY"
sleep 0.2
for _ in 1 2 3; do xdotool click 4; sleep 0.2; done
sleep 0.5
shot zoomed-in
xdotool click 5
sleep 0.5
shot zoomed-out
xdotool key ctrl+0
sleep 0.5

# label 2 and a stroke dragged across the lower left of the image
xdotool key 2
xdotool mousemove $((CX - 120)) $((CY + 120)) mousedown 1
for dx in 20 40 60 80 100; do xdotool mousemove $((CX - 120 + dx)) $((CY + 120)); sleep 0.05; done
xdotool mouseup 1
sleep 0.5
shot painted

# run, look during and after
xdotool key ctrl+r
sleep 1
shot running
# finished when the app's CPU time stops growing for two seconds (at most two minutes)
cpu() { kill -0 "$APP" 2> /dev/null && ps -o cputimes= -p "$APP" | tr -d ' ' || echo gone; }
last=$(cpu)
idle=0
for _ in $(seq 120); do
    sleep 1
    now=$(cpu)
    [ "$now" = gone ] && fail "the app exited during the run"
    if [ "$now" = "$last" ]; then idle=$((idle + 1)); else idle=0; fi
    last=$now
    [ $idle -ge 2 ] && break
done
[ $idle -ge 2 ] || fail "the run did not finish in two minutes"
shot finished

# File > Export labels PNG… (Alt+F, then its mnemonic L), type the path into the dialog
LABELS="$OUT/labels.png"
xdotool key alt+f
sleep 0.5
xdotool key l
sleep 1.5
shot export-dialog
xdotool key ctrl+a
xdotool type --delay 10 "$LABELS"
xdotool key Return
sleep 1.5
shot exported
[ -s "$LABELS" ] || fail "the labels were not exported to $LABELS"
say "labels exported: $(stat -c %s "$LABELS") bytes"
say "done: $step screenshots in $OUT"
