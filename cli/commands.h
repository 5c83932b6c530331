/* Subcommands of the `ember` CLI, each in its own file under cli/. */
#ifndef EMBER_CLI_COMMANDS_H
#define EMBER_CLI_COMMANDS_H

/* argv[0] is the subcommand name; return the process exit status. */
int cmd_analyze_pcap(int argc, char **argv);
int cmd_profile(int argc, char **argv);

#endif
