#!/bin/sh
# The default user (uid 1000, zsh), owner of its home and /workspace, and what any other uid needs:
# clusters run images as an arbitrary uid, OpenShift with gid 0, so the home and /workspace belong
# to group 0 and are group-writable (setgid keeps new files in it). A user the base brings with the
# same uid or gid (Ubuntu 24.04's ubuntu) makes way. /etc/pudev/start.d takes start-up hooks.
# The shell setup (setup-shells.sh, beside this script) runs before the home is handed over.
# Usage: add-user.sh USER_NAME USER_UID USER_GID
set -eu
name=$1
uid=$2
gid=$3
if getent passwd "$uid" >/dev/null; then userdel --remove "$(getent passwd "$uid" | cut -d: -f1)"; fi
if getent group "$gid" >/dev/null; then groupdel "$(getent group "$gid" | cut -d: -f1)"; fi
groupadd --gid "$gid" "$name"
useradd --uid "$uid" --gid "$gid" --create-home --shell /usr/bin/zsh "$name"
mkdir -p /workspace /etc/pudev/start.d /var/cache/pudev/ccache /var/cache/pudev/wheels
chmod 0777 /var/cache/pudev/ccache
chmod 1777 /var/cache/pudev/wheels
sh "$(dirname "$0")/setup-shells.sh" "$name"
chmod 0755 "/home/$name" /workspace
chown -R "$uid:0" "/home/$name" /workspace
chmod -R g=u "/home/$name" /workspace
chmod g+s "/home/$name" /workspace
