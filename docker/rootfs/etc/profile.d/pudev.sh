# shellcheck shell=sh
# PyTorch Universal Dev: login shells (bash -l, sh -l, zsh -l through /etc/zsh/zprofile)
# keep the image's environment, and any user id gets a writable HOME.
# shellcheck source=docker/rootfs/etc/pudev/shell/home.sh
. /etc/pudev/shell/home.sh
# /etc/profile on some bases resets PATH, which
# would lose python, pip, jupyter and nvcc; the entries the image set that PATH
# no longer has are put back in front, in their order.
if [ -r /etc/pudev/shell/path ]; then
    _pudev_missing=""
    _pudev_ifs=$IFS
    IFS=:
    # shellcheck disable=SC2013  # one line of ':'-separated entries
    for _pudev_entry in $(cat /etc/pudev/shell/path); do
        case ":$PATH:" in
            *":$_pudev_entry:"*) ;;
            *) _pudev_missing="${_pudev_missing:+$_pudev_missing:}$_pudev_entry" ;;
        esac
    done
    IFS=$_pudev_ifs
    if [ -n "$_pudev_missing" ]; then
        PATH="$_pudev_missing${PATH:+:$PATH}"
        export PATH
    fi
    unset _pudev_missing _pudev_ifs _pudev_entry
fi
# The cuda-switch function in the shells that have functions with '-' in their name.
if [ -n "${BASH_VERSION:-}${ZSH_VERSION:-}" ]; then
    # shellcheck source=docker/rootfs/etc/pudev/shell/cuda-switch.sh
    . /etc/pudev/shell/cuda-switch.sh
fi
