# bash completion for lockctl(1): commands, subcommands, options and what they take.
_lockctl() {
        local cur prev words cword
        if declare -F _init_completion >/dev/null; then
                _init_completion || return
        else
                cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
                words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
        fi
        local verbs="plugin marketplace grant revoke handles budget tickets deny approve results
                session console notify status agent audit release verify-bundle help"
        local i verb="" sub=""
        for ((i = 1; i < cword; i++)); do
                case ${words[i]} in
                --socket) ((i++)) ;;
                -*) ;;
                *)
                        if [[ -z $verb ]]; then
                                verb=${words[i]}
                        elif [[ -z $sub ]]; then
                                # Only these verbs have subcommands: another's next word is an argument.
                                case $verb in
                                plugin | marketplace | budget | session | agent | audit | release) sub=${words[i]} ;;
                                esac
                        fi
                        ;;
                esac
        done
        case $prev in
        --socket | --trusted-root | --bundle | --key | --index | --state-dir)
                COMPREPLY=($(compgen -f -- "$cur"))
                return ;;
        --agent | --user)
                COMPREPLY=($(compgen -u -- "$cur"))
                return ;;
        esac
        if [[ -z $verb ]]; then
                COMPREPLY=($(compgen -W "$verbs --socket --json --help --version" -- "$cur"))
                return
        fi
        local subs="" opts="--json --help"
        case $verb in
        plugin) subs="new test lint install search update list remove run sync" ;;
        marketplace) subs="lint add list remove" ;;
        budget) subs="show reset" ;;
        session) subs="end" ;;
        agent) subs="run" ;;
        audit) subs="verify" ;;
        release) subs="verify" ;;
        help) subs=$verbs ;;
        esac
        if [[ -n $subs && -z $sub ]]; then
                COMPREPLY=($(compgen -W "$subs" -- "$cur"))
                return
        fi
        case $verb${sub:+ $sub} in
        "plugin test") opts+=" --input --inputs --expect --fixtures --plugin --scope --stderr" ;;
        "plugin lint") opts+=" --source" ;;
        "plugin new") opts+=" --lang --protocol --dir --sdk" ;;
        "plugin install") opts+=" --marketplace --index --cacert --accept-name" ;;
        "plugin search") opts+=" --marketplace --cacert" ;;
        "plugin update") opts+=" --cacert --accept-name" ;;
        "plugin sync") opts+=" --cacert" ;;
        "plugin remove") opts+=" --version" ;;
        "plugin run") opts+=" --input" ;;
        "marketplace lint") opts+=" --identity" ;;
        "marketplace add") opts+=" --url --issuer --identity --trusted-root --force" ;;
        grant) opts+=" --agent --label --budget --ttl --auto" ;;
        tickets) opts+=" --state --agent --limit --cursor --all" ;;
        "budget reset") opts+=" --yes" ;;
        approve) opts+=" --yes --pinentry" ;;
        console) opts+=" --pinentry" ;;
        notify) opts+=" --pinentry --terminal" ;;
        "agent run") opts="--user --property --help" ;;
        "audit verify") opts+=" --state-dir --journal --match" ;;
        "release verify") opts+=" --trusted-root --issuer --identity --index" ;;
        verify-bundle) opts+=" --bundle --certificate-identity --certificate-oidc-issuer --key --trusted-root" ;;
        esac
        if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        else
                COMPREPLY=($(compgen -f -- "$cur"))
        fi
}
complete -F _lockctl lockctl
