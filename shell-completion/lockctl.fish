# fish completion for lockctl(1).
set -l verbs plugin marketplace grant revoke handles budget tickets deny approve results session console notify status agent audit release verify-bundle help
complete -c lockctl -f
complete -c lockctl -n "not __fish_seen_subcommand_from $verbs" -a "$verbs"
complete -c lockctl -l socket -r -F -d "the console socket"
complete -c lockctl -l json -d "one JSON object on stdout"
complete -c lockctl -s h -l help -d "usage"
complete -c lockctl -l version -d "the version"
complete -c lockctl -n "__fish_seen_subcommand_from plugin; and not __fish_seen_subcommand_from new test lint install search update list remove run sync" -a "new test lint install search update list remove run sync"
complete -c lockctl -n "__fish_seen_subcommand_from marketplace; and not __fish_seen_subcommand_from lint add list remove" -a "lint add list remove"
complete -c lockctl -n "__fish_seen_subcommand_from budget; and not __fish_seen_subcommand_from show reset" -a "show reset"
complete -c lockctl -n "__fish_seen_subcommand_from session" -a end
complete -c lockctl -n "__fish_seen_subcommand_from agent" -a run
complete -c lockctl -n "__fish_seen_subcommand_from audit release" -a verify
complete -c lockctl -n "__fish_seen_subcommand_from test run" -l input -r -d "NAME=VALUE"
complete -c lockctl -n "__fish_seen_subcommand_from test" -l scope -d "run in a transient scope"
complete -c lockctl -n "__fish_seen_subcommand_from test" -l inputs -r -F -d "a JSON object of input values"
complete -c lockctl -n "__fish_seen_subcommand_from test" -l expect -x -a "1 0" -d "the expected answer"
complete -c lockctl -n "__fish_seen_subcommand_from test" -l fixtures -d "every fixture of fixtures/one and fixtures/zero"
complete -c lockctl -n "__fish_seen_subcommand_from test" -l plugin -r -F -d "the binary instead of DIR/plugin"
complete -c lockctl -n "__fish_seen_subcommand_from test" -l stderr -d "show the plugin's stderr"
complete -c lockctl -n "__fish_seen_subcommand_from plugin; and __fish_seen_subcommand_from lint" -l source -r -F -d "the import check of a source directory"
complete -c lockctl -n "__fish_seen_subcommand_from new" -l lang -x -a "c go" -d "the plugin's language"
complete -c lockctl -n "__fish_seen_subcommand_from new" -l protocol -x -a "1 2" -d "the contract's protocol"
complete -c lockctl -n "__fish_seen_subcommand_from new" -l dir -r -F -d "the new directory"
complete -c lockctl -n "__fish_seen_subcommand_from new" -l sdk -r -F -d "the Go SDK's directory"
complete -c lockctl -n "__fish_seen_subcommand_from install search" -l marketplace -r
complete -c lockctl -n "__fish_seen_subcommand_from install search update sync" -l cacert -r -F
complete -c lockctl -n "__fish_seen_subcommand_from add" -l url -r
complete -c lockctl -n "__fish_seen_subcommand_from install release" -l index -r -F
complete -c lockctl -n "__fish_seen_subcommand_from add lint release" -l identity -r
complete -c lockctl -n "__fish_seen_subcommand_from add release" -l issuer -r
complete -c lockctl -n "__fish_seen_subcommand_from add release verify-bundle" -l trusted-root -r -F
complete -c lockctl -n "__fish_seen_subcommand_from grant" -l agent -r -a "(__fish_complete_users)"
complete -c lockctl -n "__fish_seen_subcommand_from grant" -l label -r
complete -c lockctl -n "__fish_seen_subcommand_from grant" -l budget -r
complete -c lockctl -n "__fish_seen_subcommand_from grant" -l ttl -r
complete -c lockctl -n "__fish_seen_subcommand_from grant" -l auto
complete -c lockctl -n "__fish_seen_subcommand_from tickets" -l state -r -a "pending running done denied cancelled expired"
complete -c lockctl -n "__fish_seen_subcommand_from tickets" -l agent -r
complete -c lockctl -n "__fish_seen_subcommand_from tickets" -l limit -r
complete -c lockctl -n "__fish_seen_subcommand_from tickets" -l cursor -r
complete -c lockctl -n "__fish_seen_subcommand_from tickets" -l all
complete -c lockctl -n "__fish_seen_subcommand_from approve reset" -l yes
complete -c lockctl -n "__fish_seen_subcommand_from approve console notify" -l pinentry
complete -c lockctl -n "__fish_seen_subcommand_from notify" -l terminal -r
complete -c lockctl -n "__fish_seen_subcommand_from run; and __fish_seen_subcommand_from agent" -l user -r -a "(__fish_complete_users)"
complete -c lockctl -n "__fish_seen_subcommand_from verify" -l state-dir -r -F
complete -c lockctl -n "__fish_seen_subcommand_from grant test lint install verify" -F
