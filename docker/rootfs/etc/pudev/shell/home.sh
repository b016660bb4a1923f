# shellcheck shell=sh
# PyTorch Universal Dev: a writable HOME for any user id, with or without the entrypoint.
# A uid without a passwd entry gets HOME=/ from docker, where nothing can be written.
# Sourced by /etc/zsh/zshenv (every zsh), /etc/profile.d/pudev.sh (login shells),
# /etc/pudev/shell/bashrc (interactive bash) and pudev-entrypoint. The rule itself
# lives in pudev.image.home, which every Python program also applies at start-up;
# a shell only asks it when HOME is unusable, so the usual start costs one test.
if [ "${HOME:-/}" = / ] || [ ! -d "$HOME" ] || [ ! -w "$HOME" ] || [ ! -x "$HOME" ]; then
    # (-c, not -m: every Python start has already imported pudev.image.home through pudev.pth)
    if _pudev_home=$(/opt/pudev/bin/python -c 'import pudev.image.home as h, sys; sys.exit(h.main(["--sh"]))'); then
        eval "$_pudev_home"
    fi
    unset _pudev_home
fi
# pip installs a user's commands into ~/.local/bin when the environment is not theirs to write.
# Debian's ~/.profile adds that folder only to login shells, and only once it exists, so a
# terminal or a notebook's `!command` would not find what was just installed. Last, so a
# command installed there never shadows the image's own (pip, python, jupyter).
case ":${PATH:-}:" in
    *":$HOME/.local/bin:"*) ;;
    *) PATH="${PATH:+$PATH:}$HOME/.local/bin" && export PATH ;;
esac
