# fish completion for lockask(1).
set -l verbs files questions ask wait cancel mcp
complete -c lockask -f
complete -c lockask -n "not __fish_seen_subcommand_from $verbs" -a "$verbs"
complete -c lockask -l socket -r -F -d "the agent socket"
complete -c lockask -l json -d "one JSON object on stdout"
complete -c lockask -s h -l help -d "usage"
complete -c lockask -n "__fish_seen_subcommand_from ask" -l input -r -d "NAME='\${placeholder}'"
complete -c lockask -n "__fish_seen_subcommand_from ask" -l plan -r -F
complete -c lockask -n "__fish_seen_subcommand_from ask" -l no-wait
complete -c lockask -n "__fish_seen_subcommand_from ask wait" -l timeout -r -d "100ms, 30s, 5m, 1h"
