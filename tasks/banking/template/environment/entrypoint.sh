#!/bin/sh
# The image's ENTRYPOINT (Docker runs it at container start; so does LocalEnvironment, as root):
# make the intents and conversation logs root's (0644) in a sticky folder, so the agent's user
# can neither write nor replace them, make the customer's brief (conversation-mode tasks)
# readable by root alone, start the bank service that alone writes the logs and reads the
# brief, then run the given command. Shell builtins where they do: this runs at every start.
set -eu
umask 022
log="${BANK_INTENTS:-/logs/agent/intents.jsonl}"
talk="${BANK_CONVERSATION:-${log%/*}/conversation.jsonl}"
mkdir -p "${log%/*}" "${talk%/*}" /run/bank
chmod 1777 "${log%/*}" "${talk%/*}"
for file in "$log" "$talk"; do
    # Whatever stands there that is not root's plain file (a link, another user's file) goes.
    if [ -L "$file" ] || { [ -e "$file" ] && ! [ -O "$file" ]; }; then rm -rf "$file"; fi
    [ -e "$file" ] || : > "$file"
done
brief="${0%/*}/customer.json"
if [ -e "$brief" ]; then chown 0:0 "$brief" 2>/dev/null || true; chmod 600 "$brief"; fi
python3 "${0%/*}/bankd.py" </dev/null >>/run/bank/bankd.log 2>&1 &
[ "$#" -gt 0 ] && exec "$@"
exit 0
