#!/bin/sh
# The image's ENTRYPOINT (Docker runs it at container start; so does LocalEnvironment, as root):
# make the intents log root's (0644) in a sticky folder, so the agent's user can neither write
# nor replace it, start the bank service that alone writes it, then run the given command.
set -eu
log="${BANK_INTENTS:-/logs/agent/intents.jsonl}"
here="$(dirname "$0")"
mkdir -p "$(dirname "$log")" /run/bank
chmod 1777 "$(dirname "$log")"
chmod 0755 /run/bank
# Whatever stands there that is not root's plain file (a link, another user's file) goes.
if [ -L "$log" ] || { [ -e "$log" ] && [ "$(stat -c %u "$log")" != 0 ]; }; then rm -rf "$log"; fi
[ -e "$log" ] || : > "$log"
chmod 0644 "$log"
python3 "$here/bankd.py" </dev/null >>/run/bank/bankd.log 2>&1 &
[ "$#" -gt 0 ] && exec "$@"
exit 0
