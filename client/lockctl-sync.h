/* lockctl plugin sync: the installed plugins made exactly a pinned list. */
#pragma once

int verb_plugin_sync(int argc, char **argv);
