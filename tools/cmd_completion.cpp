// `collsched completion bash|zsh`: a shell completion script written from the command line's own
// definition (every subcommand and its options, as CLI11 holds them), so it never falls behind
// the commands. Install: `collsched completion bash > /etc/bash_completion.d/collsched`, or for
// zsh a file `_collsched` on $fpath.
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "tools/commands.hpp"

namespace collsched::tools {

namespace {

/// The long and short option names of `app` ("--json", "-o"), then --help.
std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> out;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_positional()) continue;
        for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
        for (const std::string& s : o->get_snames()) out.push_back("-" + s);
    }
    return out;
}

/// The first sentence of a description, for zsh's menus, with the characters zsh's specs treat
/// specially removed.
std::string summary(const std::string& text) {
    std::string s = text.substr(0, std::min(text.find(". "), text.find('\n')));
    std::string out;
    for (char c : s) {
        if (c == '\'' ) out += "'\\''";
        else if (c == '[' || c == ']') out += c == '[' ? '(' : ')';
        else if (c == ':') out += ' ';
        else out += c;
    }
    return out.size() > 70 ? out.substr(0, 67) + "..." : out;
}

std::string bash_script(const CLI::App& root) {
    std::string commands, cases;
    for (const CLI::App* sub : root.get_subcommands({})) {
        if (sub->get_name() == "completion") continue;
        commands += (commands.empty() ? "" : " ") + sub->get_name();
        std::string opts;
        for (const std::string& o : option_names(*sub)) opts += (opts.empty() ? "" : " ") + o;
        cases += fmt::format("    {}) opts=\"{}\" ;;\n", sub->get_name(), opts);
    }
    return fmt::format(
        "# bash completion for collsched (written by `collsched completion bash`)\n"
        "_collsched() {{\n"
        "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" opts=\"\"\n"
        "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
        "    COMPREPLY=( $(compgen -W \"{} completion --help --version\" -- \"$cur\") )\n"
        "    return\n"
        "  fi\n"
        "  case \"${{COMP_WORDS[1]}}\" in\n"
        "{}"
        "    completion) opts=\"bash zsh\" ;;\n"
        "  esac\n"
        "  if [[ \"$cur\" == -* || \"${{COMP_WORDS[1]}}\" == completion ]]; then\n"
        "    COMPREPLY=( $(compgen -W \"$opts\" -- \"$cur\") )\n"
        "  else\n"
        "    COMPREPLY=( $(compgen -f -- \"$cur\") )\n"
        "  fi\n"
        "}}\n"
        "complete -o filenames -F _collsched collsched\n",
        commands, cases);
}

std::string zsh_script(const CLI::App& root) {
    std::string commands, cases;
    for (const CLI::App* sub : root.get_subcommands({})) {
        commands += fmt::format("    '{}:{}'\n", sub->get_name(), summary(sub->get_description()));
        std::string specs;
        for (const CLI::Option* o : sub->get_options()) {
            if (o->get_positional()) continue;
            for (const std::string& l : o->get_lnames()) specs += fmt::format(" '--{}[{}]'", l, summary(o->get_description()));
            for (const std::string& s : o->get_snames()) specs += fmt::format(" '-{}[{}]'", s, summary(o->get_description()));
        }
        cases += fmt::format("    {}) _arguments{} '*:file:_files' ;;\n", sub->get_name(), specs);
    }
    return fmt::format(
        "#compdef collsched\n"
        "# zsh completion for collsched (written by `collsched completion zsh`)\n"
        "_collsched() {{\n"
        "  local -a commands\n"
        "  commands=(\n{}  )\n"
        "  if (( CURRENT == 2 )); then\n"
        "    _describe 'command' commands\n"
        "    return\n"
        "  fi\n"
        "  case $words[2] in\n"
        "{}"
        "  esac\n"
        "}}\n"
        "_collsched \"$@\"\n",
        commands, cases);
}

}  // namespace

void add_completion_command(CLI::App& app, Context& ctx) {
    auto shell = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("completion",
                                   "Print a shell completion script for bash or zsh: subcommands, their options, and files. "
                                   "Install with `collsched completion bash > /etc/bash_completion.d/collsched`, or "
                                   "`collsched completion zsh > DIR/_collsched` for a DIR on $fpath.\nExit code: 0 printed, 2 an unknown shell.");
    cmd->add_option("SHELL", *shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
    cmd->callback([&app, &ctx, shell] {
        std::string out = *shell == "bash" ? bash_script(app) : zsh_script(app);
        ctx.print(out);
        ctx.exit_code = 0;
    });
}

}  // namespace collsched::tools
