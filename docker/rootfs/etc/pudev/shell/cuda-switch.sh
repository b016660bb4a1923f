# shellcheck shell=bash
# cuda-switch VERSION | --list: choose the CUDA toolkit for this shell (bash and zsh).
# Sourced at startup by /etc/pudev/shell/{bashrc,zshrc}. pudev.image.cudaswitch
# decides what to change and prints it as shell assignments; messages go to stderr.
cuda-switch() {
    _pudev_switch=$(python -m pudev.image.cudaswitch "$@") || {
        _pudev_status=$?
        unset _pudev_switch
        return "$_pudev_status"
    }
    eval "$_pudev_switch"
    unset _pudev_switch
}
