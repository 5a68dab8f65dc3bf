#!/usr/bin/env bash
# Argos (GNOME Shell extension): the gate widget.
#
# Install: copy to ~/.config/argos/ and make it executable. The file name is
# Argos' NAME.POSITION.INTERVAL[+].EXTENSION: "r" puts the button on the right
# of the top bar, "1s" re-runs this script every second (Argos polls; it cannot
# follow a --watch stream), "+" re-runs it as well when the menu opens.
#
# The button shows the state in its colour: green ready, blue busy (an opening
# is under way), red failed (until the reset delay is over), orange
# interrupted. Click it for the menu; "Open gate" opens the gate once.
#
# Argos runs this with GNOME Shell's PATH: if gate is not in /usr/bin or
# /usr/local/bin, set GATE below to its full path.
GATE=${GATE:-gate}

# Argos reads "TEXT | attribute=value ...": keep the text free of "|", and turn
# off markup, emoji codes, ANSI and escapes (the words come from status.json).
plain() { tr -d '|\n'; }
literal='useMarkup=false emojize=false ansi=false unescape=false'

# Three lines: label, short label, colour (#rrggbb).
if ! status=$("$GATE" status --format i3blocks 2>&1); then
    echo "gate ? | color=#888888 dropdown=false"
    echo "---"
    echo "$(printf '%s' "$status" | head -n 1 | plain) | $literal"
    exit 0
fi
label=$(sed -n 1p <<<"$status" | plain)
colour=$(sed -n 3p <<<"$status" | plain)

echo "$label | color=$colour dropdown=false $literal"
echo "---"
echo "$("$GATE" status --format text 2>/dev/null | plain) | $literal"
echo "Open gate | bash='$GATE open --source widget' terminal=false refresh=true"
