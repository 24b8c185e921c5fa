#!/bin/sh
# The image's ENTRYPOINT (Docker runs it at container start; so does LocalEnvironment, as root):
# make the intents log root's (0644) in a sticky folder, so the agent's user can neither write
# nor replace it, start the bank service that alone writes it, then run the given command.
# Shell builtins where they do: this runs at every trial's start.
set -eu
umask 022
log="${BANK_INTENTS:-/logs/agent/intents.jsonl}"
mkdir -p "${log%/*}" /run/bank
chmod 1777 "${log%/*}"
# Whatever stands there that is not root's plain file (a link, another user's file) goes.
if [ -L "$log" ] || { [ -e "$log" ] && ! [ -O "$log" ]; }; then rm -rf "$log"; fi
[ -e "$log" ] || : > "$log"
python3 "${0%/*}/bankd.py" </dev/null >>/run/bank/bankd.log 2>&1 &
[ "$#" -gt 0 ] && exec "$@"
exit 0
