#!/bin/sh
# Shell setup for root and the default user (run once, as root, at build time).
#   rc files      zsh and bash load /etc/pudev/shell/{zshrc,bashrc} from the system-wide rc
#                 files, so a home on a fresh volume keeps the image's shell; bash loads it
#                 again after ~/.bashrc, whose prompt would otherwise win
#   login shells  /etc/profile may reset PATH (Debian's does): /etc/profile.d/pudev.sh
#                 puts the image's PATH back from /etc/pudev/shell/path; zsh reads it
#                 through /etc/zsh/zprofile
#   zsh startup   the completion dump is built and compiled here, outside any home, so
#                 a fresh home, volume or tmpfs still starts fast, without the first-run menu
#   any user id   every zsh (zshenv), login shell (profile.d) and interactive bash sources
#                 /etc/pudev/shell/home.sh: a writable HOME when docker gave HOME=/
# Usage: setup-shells.sh USER_NAME
set -eu
user=$1

printf '\n# PyTorch Universal Dev: the image shell, for every user and a fresh home too.\nsource /etc/pudev/shell/zshrc\n' \
    >> /etc/zsh/zshrc
printf '\n# PyTorch Universal Dev: the image shell, for every user and a fresh home too.\n. /etc/pudev/shell/bashrc\n' \
    >> /etc/bash.bashrc
for home in /root "/home/$user"; do
    # A .zshrc of one's own (zsh would otherwise offer its first-run setup menu).
    printf "# Your zsh settings. The image's shell comes from /etc/zsh/zshrc (/etc/pudev/shell/zshrc).\n" \
        > "$home/.zshrc"
    printf '\n. /etc/pudev/shell/bashrc\n' >> "$home/.bashrc"
done
chown "$user:" "/home/$user/.zshrc" "/home/$user/.bashrc"

# The PATH this image runs with (the base's, which the Dockerfile keeps).
printf '%s\n' "$PATH" > /etc/pudev/shell/path
# python and pip under their plain names where the base has only python3 and pip3.
for name in python pip; do
    if ! command -v "$name" >/dev/null 2>&1 && command -v "${name}3" >/dev/null 2>&1; then
        ln -s "$(command -v "${name}3")" "/usr/local/bin/$name"
    fi
done
# The interpreter that holds pudev, whatever environment a user activates later. A wrapper,
# not a symlink: a venv's python found through a link elsewhere loses its environment.
mkdir -p /opt/pudev/bin
printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > /opt/pudev/bin/python
chmod 0755 /opt/pudev/bin/python

printf '\n# PyTorch Universal Dev: the image environment for login shells.\nemulate sh -c ". /etc/profile.d/pudev.sh"\n' \
    >> /etc/zsh/zprofile
# Ubuntu's global zshrc runs its own compinit (slow, and it writes ~/.zcompdump); the image's zshrc runs one.
printf '\nskip_global_compinit=1\n' >> /etc/zsh/zshenv
# Every zsh (scripts too, with or without the entrypoint): a writable HOME for any user id.
printf '\n# PyTorch Universal Dev: a writable HOME for any user id.\nemulate sh -c ". /etc/pudev/shell/home.sh"\n' \
    >> /etc/zsh/zshenv
# A home without zsh startup files (a fresh volume, an arbitrary uid's own HOME) would get zsh's
# first-run menu; the image's shell comes from /etc/zsh/zshrc, so the site-wide newuser script
# (read instead of the distribution's, which starts the menu) only says so.
mkdir -p /usr/share/zsh/scripts
printf "# PyTorch Universal Dev: no first-run menu; the image's shell comes from /etc/zsh/zshrc.\n" \
    > /usr/share/zsh/scripts/newuser

mkdir -p /var/cache/pudev/zsh
zsh -f -c 'autoload -Uz compinit && compinit -i -d /var/cache/pudev/zsh/zcompdump \
    && zcompile /var/cache/pudev/zsh/zcompdump'
chmod -R a+rX /var/cache/pudev
