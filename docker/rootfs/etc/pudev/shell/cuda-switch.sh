# shellcheck shell=bash
# cuda-switch VERSION | --list: choose the CUDA toolkit for this shell (bash and zsh).
# Sourced by /etc/pudev/shell/{bashrc,zshrc} and /etc/profile.d/pudev.sh. The
# program of the same name decides what to change and prints shell assignments,
# which this function applies; other shells: eval "$(cuda-switch VERSION)".
cuda-switch() {
    _pudev_switch=$(PUDEV_CUDA_SWITCH_EVAL=1 /opt/pudev/bin/python -m pudev.image.cudaswitch "$@") || {
        _pudev_status=$?
        unset _pudev_switch
        return "$_pudev_status"
    }
    eval "$_pudev_switch"
    unset _pudev_switch
}
