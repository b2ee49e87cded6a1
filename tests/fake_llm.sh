#!/bin/sh
# Stands in for an LLM command line tool (like `llm -m …`) in the sampling tests: reads the
# sampling request (JSON on stdin), keeps a copy in $FAKE_LLM_SAW when set, and answers
# with one line that shows it saw the request.
input=$(cat)
if [ -n "$FAKE_LLM_SAW" ]; then
  printf '%s\n' "$input" > "$FAKE_LLM_SAW"
fi
bytes=$(printf '%s' "$input" | wc -c | tr -d ' ')
case "$input" in
  *sampling/createMessage*) kind="a sampling request" ;;
  *) kind="something else" ;;
esac
echo "Fake model reply: I read $kind of $bytes bytes."
