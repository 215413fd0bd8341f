# Sourced by .ci/peers.sh: installs Debian's Chromium with apt-get (needs root and the Debian
# package mirror). apt-get and dpkg write about a hundred lines of progress; they go to a log
# file, and the test log gets one line (or, when the install fails, the log's last lines).

# install_chromium CHROMIUM LOGFILE: installs the apt package `chromium`, which provides the
# executable CHROMIUM. Returns non-zero, after printing why on stderr, when apt-get fails or
# CHROMIUM is still missing afterwards.
install_chromium() {
  local chromium=$1 logfile=$2
  echo "[peers] installing Debian chromium (apt-get; its output goes to $logfile)" >&2
  if ! { apt-get update -qq && \
         DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } \
       >"$logfile" 2>&1 </dev/null; then
    tail -n 20 "$logfile" | sed 's/^/[peers]   /' >&2
    echo "[peers] ERROR: could not install Debian chromium: apt-get failed (it needs root and the Debian package mirror; all of its output is in $logfile)" >&2
    return 1
  fi
  if [ ! -x "$chromium" ]; then
    echo "[peers] ERROR: apt-get installed chromium but $chromium is missing (see $logfile)" >&2
    return 1
  fi
  echo "[peers] chromium installed: $("$chromium" --version 2>/dev/null || echo "$chromium")" >&2
}
