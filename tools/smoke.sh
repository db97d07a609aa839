#!/usr/bin/env bash
# The app in a real X window, as a person meets it: `make smoke` (not part of `make test`).
#
# Starts a virtual X server (Xvfb), opens the app with the bundled cameraman, loads the sample
# with its strokes from the Samples menu, zooms with the mouse wheel, paints a stroke with the
# mouse, runs, exports the labels, the colour-coded labels and a cut-out (with a soft edge)
# through the File menu's dialogs, saves the session, opens the photo again and then the session
# (File > Open session), looks at Open recent, and finally opens a 4 MP photo, paints, runs and
# closes the window during the run (the quit question, then the time the process takes to end),
# with a screenshot after each step in out/smoke/ (look at them; the cut-out is also composited
# over a checkerboard as cutout-on-checkerboard.png). Exits non-zero if the window never
# appears, the run does not finish, an export is not written or not what it should be, the
# session does not open, or the process outlives the close by more than 2 s.
#
# Needs (Debian/Ubuntu): sudo apt-get install xvfb xdotool imagemagick libxcb-cursor0 \
#     libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0
# Overrides: OUT (default out/smoke), SMOKE_DISPLAY (default :97), SEGAPP (default .venv/bin/segapp)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/smoke}
DISP=${SMOKE_DISPLAY:-:97}
SEGAPP=${SEGAPP:-.venv/bin/segapp}
for tool in Xvfb xdotool import convert; do
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
# the app's autosave and its settings (recent files, the cut-out's last choice) of its own, so
# nothing a person has changes what it shows and a run the trap kills leaves no restore offer
export SEGAPP_AUTOSAVE_DIR="$OUT/autosave" XDG_CONFIG_HOME="$OUT/config"
for _ in $(seq 50); do xdotool getmouselocation > /dev/null 2>&1 && break; sleep 0.1; done

step=0
shot() {  # shot NAME: a numbered screenshot of the whole screen
    step=$((step + 1))
    import -window root "$OUT/$(printf %02d "$step")-$1.png"
    echo "screenshot $(printf %02d "$step")-$1.png" >> "$LOG"
}
say() { echo "smoke: $*" | tee -a "$LOG"; }
fail() { say "FAILED: $*"; shot failed; exit 1; }
# the main window's keyboard focus back (Xvfb has no window manager: when a dialog closes, the
# focus can stay nowhere, and keys then reach no window)
focus() { timeout 3 xdotool windowfocus --sync "$WIN" 2> /dev/null || xdotool windowfocus "$WIN"; sleep 0.2; }
file_menu() { focus; xdotool key alt+f; sleep 0.5; xdotool key "$1"; }  # file_menu MNEMONIC

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
# finished when the app (all its threads) uses under 5% of a core for two seconds running, at
# most three minutes: CPU time in clock ticks (/proc/PID/stat's utime + stime), since whole
# seconds (ps) stood still for two seconds during a polish on a busy machine
cpu() { [ -r "/proc/$APP/stat" ] && awk '{print $14 + $15}' "/proc/$APP/stat" || echo gone; }
TICKS=$(getconf CLK_TCK)
wait_idle() {  # wait_idle SECONDS: until the app is idle, or fail
    local last now idle=0
    last=$(cpu)
    for _ in $(seq "$1"); do
        sleep 1
        now=$(cpu)
        [ "$now" = gone ] && fail "the app exited during the run"
        if [ $((now - last)) -lt $((TICKS / 20 + 1)) ]; then idle=$((idle + 1)); else idle=0; fi
        last=$now
        [ $idle -ge 2 ] && return 0
    done
    fail "the run did not finish in $1 s"
}
wait_idle 180
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
PY=${PYTHON:-.venv/bin/python}

# File > Export colour-coded labels… (mnemonic C): a palette PNG whose index is the label
COLOUR="$OUT/labels-colour.png"
file_menu c
sleep 1.5
shot labels-colour-dialog
xdotool key ctrl+a
xdotool type --delay 10 "$COLOUR"
xdotool key Return
sleep 1.5
[ -s "$COLOUR" ] || fail "the colour-coded labels were not exported to $COLOUR"
"$PY" - "$LABELS" "$COLOUR" >> "$LOG" 2>&1 <<'PYEOF' || fail "the colour-coded labels are wrong"
import sys
import numpy as np
from PIL import Image
from segapp.core.io import load_label_image
plain, colour = (load_label_image(p) for p in sys.argv[1:3])
assert Image.open(sys.argv[2]).mode == "P", "not a palette PNG"
assert np.array_equal(plain, colour), "the colour-coded labels differ from the plain ones"
print("smoke: colour-coded labels: a palette PNG with the same labels", np.unique(colour))
PYEOF
shot labels-colour-exported

# File > Export cut-out… (mnemonic U): the dialog (label 1 checked), a 3 px soft edge typed
# into its spin box (two Tabs from the first check box with K = 2), then the save dialog
CUTOUT="$OUT/cutout.png"
file_menu u
sleep 1.5
xdotool key Tab Tab
xdotool key ctrl+a
xdotool type --delay 20 "3"
sleep 0.3
shot cutout-dialog
xdotool key Return
sleep 1.5
shot cutout-save-dialog
xdotool key ctrl+a
xdotool type --delay 10 "$CUTOUT"
xdotool key Return
sleep 1.5
shot cutout-exported
[ -s "$CUTOUT" ] || fail "the cut-out was not exported to $CUTOUT"
"$PY" - "$CUTOUT" "$LABELS" >> "$LOG" 2>&1 <<'PYEOF' || fail "the cut-out is wrong"
import sys
import numpy as np
from PIL import Image
from segapp.core.io import load_label_image
im = Image.open(sys.argv[1])
assert im.mode == "RGBA", f"the cut-out is {im.mode}, not RGBA"
alpha = np.asarray(im)[..., 3]
labels = load_label_image(sys.argv[2])
soft = (alpha > 0) & (alpha < 255)
assert (alpha[labels == 2] < 255).all(), "label 2 is not transparent"
assert (alpha == 255).any() and (alpha == 0).any() and soft.any(), "no opaque/clear/soft edge"
print(f"smoke: cut-out: {np.mean(alpha == 255):.1%} opaque, {np.mean(soft):.2%} soft edge")
PYEOF
convert -size "$(identify -format %wx%h "$CUTOUT")" pattern:checkerboard "$CUTOUT" -composite \
    "$OUT/cutout-on-checkerboard.png"

# File > Save session (Ctrl+S: the first time it asks for the file), then the photo opened
# again (strokes gone) and File > Open session… (Ctrl+Shift+O) brings them back
SESSION="$OUT/session.json"
focus
xdotool key ctrl+s
sleep 1.5
xdotool key ctrl+a
xdotool type --delay 10 "$SESSION"
xdotool key Return
sleep 1.5
[ -s "$SESSION" ] || fail "the session was not saved to $SESSION"
focus
xdotool key ctrl+o
sleep 1.5
xdotool key ctrl+a
xdotool type --delay 10 "$PWD/segapp/assets/cameraman.png"
xdotool key Return
sleep 2
shot photo-reopened
focus
xdotool key ctrl+shift+o
sleep 1.5
shot open-session-dialog
xdotool key ctrl+a
xdotool type --delay 10 "$SESSION"
xdotool key Return
sleep 2
shot session-opened
xdotool getwindowname "$WIN" | grep -q "session.json" || fail "the session did not open (title:" \
    "$(xdotool getwindowname "$WIN"))"
say "session opened: $(xdotool getwindowname "$WIN")"
# File > Open recent (mnemonic R): the session is there, marked as one
file_menu r
sleep 0.8
shot recent-menu
xdotool key Escape Escape
sleep 0.3

# a rectangle at K = 3: a session with K = 3, a rectangle around the man and a stroke of label
# 3 on his trousers inside it (written here, opened with Ctrl+Shift+O), Run, export the labels:
# outside the rectangle is label 2, inside labels 1 and 3 both appear, the stroke is label 3
RECT3="$OUT/rect-k3.json"
"$PY" - "$RECT3" >> "$LOG" 2>&1 <<'PYEOF' || fail "could not write the K = 3 rectangle session"
import sys
import numpy as np
from segapp.core.io import load_image
from segapp.core.session import save_session
from segapp.model.document import Document
from pathlib import Path
photo = str(Path("segapp/assets/cameraman.png").resolve())
doc = Document()
doc.set_image(load_image(photo), photo)
doc.set_k(3)
doc.set_rect((40, 20, 140, 230))
strokes = np.zeros(doc.shape, np.uint8)
strokes[200:215, 100:130] = 3
doc.set_layers(strokes=strokes)
save_session(sys.argv[1], doc)
PYEOF
focus
xdotool key ctrl+shift+o
sleep 1.5
xdotool key ctrl+a
xdotool type --delay 10 "$RECT3"
xdotool key Return
sleep 2
shot rect-k3-opened
focus
xdotool key ctrl+r
sleep 1
wait_idle 180
shot rect-k3-finished
LABELS3="$OUT/labels-rect-k3.png"
xdotool key alt+f
sleep 0.5
xdotool key l
sleep 1.5
xdotool key ctrl+a
xdotool type --delay 10 "$LABELS3"
xdotool key Return
sleep 1.5
[ -s "$LABELS3" ] || fail "the K = 3 rectangle's labels were not exported to $LABELS3"
"$PY" - "$LABELS3" >> "$LOG" 2>&1 <<'PYEOF' || fail "the K = 3 rectangle's labels are wrong"
import sys
import numpy as np
from segapp.core.io import load_label_image
labels = load_label_image(sys.argv[1])
inside = np.zeros(labels.shape, bool)
inside[20:250, 40:180] = True
assert (labels[~inside] == 2).all(), "outside the rectangle is not label 2"
assert {1, 3} <= set(np.unique(labels[inside]).tolist()), np.unique(labels[inside])
assert (labels[200:215, 100:130] == 3).all(), "the label 3 stroke lost its label"
print("smoke: K = 3 rectangle:", {int(v): int(c) for v, c in zip(*np.unique(labels,
                                                                     return_counts=True))})
PYEOF
say "K = 3 rectangle: outside label 2, labels 1 and 3 inside"
# back to K = 2 (the saved K = 2 session) for the steps after
focus
xdotool key ctrl+shift+o
sleep 1.5
xdotool key ctrl+a
xdotool type --delay 10 "$SESSION"
xdotool key Return
sleep 2

# closing during a run: a 4 MP photo (the cameraman at 4x), a stroke of each label, Run, then
# Ctrl+Q while it runs; the question names the run; Alt+D ("Discard and Quit") must end the
# process within 2 s
BIG="$OUT/big.png"
convert segapp/assets/cameraman.png -resize 400% "$BIG"
focus
xdotool key ctrl+o
sleep 1.5
xdotool key ctrl+a
xdotool type --delay 10 "$BIG"
xdotool key Return
sleep 3
focus
xdotool key ctrl+0
sleep 0.5
eval "$(xdotool getwindowgeometry --shell "$WIN")"
CX=$((X + WIDTH * 45 / 100))
CY=$((Y + HEIGHT / 2))
drag() {  # drag X0 Y0 X1 Y1: a brush stroke
    xdotool mousemove "$1" "$2" mousedown 1
    for i in 1 2 3 4 5 6; do
        xdotool mousemove $(($1 + ($3 - $1) * i / 6)) $(($2 + ($4 - $2) * i / 6))
        sleep 0.05
    done
    xdotool mouseup 1
}
focus
xdotool key 1   # the man's coat
drag $((CX - 390)) $((CY + 60)) $((CX - 330)) $((CY + 160))
xdotool key 2   # the sky
drag $((CX + 80)) $((CY - 280)) $((CX + 280)) $((CY - 280))
sleep 0.5
shot big-painted
focus
xdotool key ctrl+r
sleep 4
shot big-running
kill -0 "$APP" 2> /dev/null || fail "the app exited during the large run"
focus
xdotool key ctrl+q
sleep 1
shot quit-question
T0=$(date +%s.%N)
xdotool key alt+d
for _ in $(seq 100); do kill -0 "$APP" 2> /dev/null || break; sleep 0.05; done
T1=$(date +%s.%N)
kill -0 "$APP" 2> /dev/null && { shot still-running; fail "the app still runs 5 s after Quit"; }
wait "$APP" || fail "the app exited with status $? after closing during a run"
APP=
TOOK=$(echo "$T1 - $T0" | bc -l)
say "closed during a run: the process ended $(printf %.2f "$TOOK") s after Discard and Quit"
[ "$(echo "$TOOK < 2" | bc -l)" = 1 ] || fail "the process took $TOOK s to end after the close"
say "done: $step screenshots in $OUT"
