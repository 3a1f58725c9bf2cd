# bash completion for lockask(1): commands and their options.
_lockask() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
        local i verb=""
        for ((i = 1; i < COMP_CWORD; i++)); do
                case ${COMP_WORDS[i]} in
                --socket | --plan | --timeout | --input) ((i++)) ;;
                -*) ;;
                *) [[ -z $verb ]] && verb=${COMP_WORDS[i]} ;;
                esac
        done
        case $prev in
        --socket | --plan) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --timeout | --input) return ;;
        esac
        if [[ -z $verb ]]; then
                COMPREPLY=($(compgen -W "files questions ask wait cancel mcp --socket --json --help --version" -- "$cur"))
                return
        fi
        local opts="--socket --json --help"
        case $verb in
        ask) opts+=" --input --plan --no-wait --timeout" ;;
        wait) opts+=" --timeout" ;;
        mcp) opts="--socket --help" ;;
        esac
        [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _lockask lockask
