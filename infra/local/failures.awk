# failures.awk: from a `go test -v` log, the messages of the tests that failed (the lines a
# test wrote, t.Errorf and t.Log, and panics), grouped under the failing test, so that a CI
# excerpt names why and not only what. Lines are attributed to the test named by the last
# "=== RUN/CONT/PAUSE/NAME" header, as go test -v prints them.
/^=== (RUN|CONT|PAUSE|NAME)/ { cur = $3; next }
/^[[:space:]]*--- FAIL: / {
  name = $3
  if (!(name in shown) && (name in out)) { print "--- " name ":"; printf "%s", out[name]; shown[name] = 1 }
  next
}
/^[[:space:]]*--- (PASS|SKIP): / { delete out[$3]; next }
/^panic: |^[[:space:]]+[A-Za-z0-9_]+_test\.go:[0-9]+: / {
  if (length(out[cur]) < 4000) out[cur] = out[cur] $0 "\n"
  if ($0 ~ /^panic: /) { print "--- panic in " cur ":"; print $0 }
  cont = 1
  next
}
# The further lines of a multi-line message are indented deeper than the message itself.
cont && /^        [[:space:]]*[^[:space:]]/ {
  if (length(out[cur]) < 4000) out[cur] = out[cur] $0 "\n"
  next
}
{ cont = 0 }
