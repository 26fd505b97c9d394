#include "apps/common/man_page.h"

#include <cctype>
#include <sstream>

namespace dflow::apps {
namespace {

// Text as roff reads it: backslashes escaped, hyphens as minus signs (so
// options can be searched and copied), a line starting with '.' or '\'' not
// taken for a request.
std::string Roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
    line_start = c == '\n';
  }
  return out;
}

bool Hidden(const CLI::Option* option) { return option->get_group().empty(); }

// "-n, --workers INT (default 1, required)"
void WriteOption(std::ostringstream& page, const CLI::Option* option) {
  std::string name = option->nonpositional() ? option->get_name(false, true) : option->get_name(true, false);
  for (size_t comma = name.find(','); comma != std::string::npos; comma = name.find(',', comma + 2))
    name.replace(comma, 1, ", ");
  page << ".TP\n\\fB" << Roff(name) << "\\fR";
  if (option->get_type_size() != 0 && !option->get_type_name().empty())
    page << " \\fI" << Roff(option->get_type_name()) << "\\fR";
  if (option->get_items_expected_max() > 1) page << " ...";
  page << "\n" << Roff(option->get_description());
  std::string notes;
  if (!option->get_default_str().empty()) notes += "default: " + option->get_default_str();
  if (option->get_required()) notes += std::string(notes.empty() ? "" : "; ") + "required";
  if (!notes.empty()) page << " (" << Roff(notes) << ")";
  page << "\n";
}

void WriteOptions(std::ostringstream& page, const CLI::App& app) {
  for (const CLI::Option* option : app.get_options([](const CLI::Option* o) { return !Hidden(o); }))
    WriteOption(page, option);
}

// "dflow launch [OPTIONS] ARGS..."
std::string Synopsis(const CLI::App& app, const std::string& name) {
  std::string line = "\\fB" + Roff(name) + "\\fR [\\fIOPTIONS\\fR]";
  for (const CLI::Option* option : app.get_options([](const CLI::Option* o) { return o->get_positional(); }))
    line += " \\fI" + Roff(option->get_name(true, false)) + "\\fR" + (option->get_items_expected_max() > 1 ? "..." : "");
  if (!app.get_subcommands({}).empty()) line += " \\fICOMMAND\\fR ...";
  return line;
}

void WriteCommands(std::ostringstream& page, const CLI::App& app, const std::string& prefix) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string name = prefix + " " + sub->get_name();
    page << ".SS " << Roff(name) << "\n" << Synopsis(*sub, name) << "\n.PP\n" << Roff(sub->get_description()) << "\n";
    WriteOptions(page, *sub);
    WriteCommands(page, *sub, name);
  }
}

}  // namespace

std::string ManPage(const CLI::App& app, const std::string& name, const std::string& version) {
  std::ostringstream page;
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  page << ".TH " << Roff(upper) << " 1 \"\" \"dflow " << Roff(version) << "\" \"dflow\"\n";
  // "dflow: run and inspect ..." reads "dflow \- run and inspect ...".
  std::string summary = app.get_description();
  if (summary.rfind(name + ": ", 0) == 0) summary.erase(0, name.size() + 2);
  page << ".SH NAME\n" << Roff(name) << " \\- " << Roff(summary) << "\n";
  page << ".SH SYNOPSIS\n" << Synopsis(app, name) << "\n";
  page << ".SH OPTIONS\n";
  WriteOptions(page, app);
  if (!app.get_subcommands({}).empty()) {
    page << ".SH COMMANDS\n";
    WriteCommands(page, app, name);
  }
  if (!app.get_footer().empty()) page << ".SH NOTES\n" << Roff(app.get_footer()) << "\n";
  page << ".SH SEE ALSO\nThe documentation in the dflow source tree: README.md and docs/.\n";
  return page.str();
}

}  // namespace dflow::apps
