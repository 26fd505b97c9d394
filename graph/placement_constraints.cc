#include "graph/placement_constraints.h"

#include <algorithm>
#include <iterator>

#include "graph/kernel.h"

namespace dflow {
namespace {

using Indices = std::vector<int>;

Indices Intersect(const Indices& a, const Indices& b) {
  Indices out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

Indices Difference(const Indices& a, const Indices& b) {
  Indices out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::string ListDevices(const Indices& indices, const std::vector<DeviceName>& devices) {
  if (indices.empty()) return "none";
  std::string text;
  for (int i : indices) text += (text.empty() ? "" : ", ") + devices[i].ToString();
  return text;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : std::string(separator)) + part;
  return text;
}

template <typename Keep>
Indices Select(const std::vector<DeviceName>& devices, Keep keep) {
  Indices out;
  for (int i = 0; i < static_cast<int>(devices.size()); ++i)
    if (keep(devices[i])) out.push_back(i);
  return out;
}

Indices Matching(const DeviceName& request, const std::vector<DeviceName>& devices) {
  return Select(devices, [&](const DeviceName& d) { return request.Matches(d); });
}

DeviceName ParseRequest(const Node& node) {
  try {
    return DeviceName::Parse(node.requested_device());
  } catch (const Error& e) {
    Fail(e.code(), node.Describe(), ": ", e.message());
  }
}

// "colocation group [w, w/init] of variable 'w'", or "" for a lone node.
std::string GroupWords(const ColocationGroups& groups, int group) {
  const std::vector<Node*>& members = groups.Members(group);
  if (members.size() < 2) return "";
  std::string words = "colocation group " + groups.Describe(group);
  for (const Node* m : members)
    if (m->def().is_variable) return words + " of variable '" + m->name() + "'";
  return words;
}

// The devices whose type has a kernel for `node`; throws when there are none.
Indices WithKernel(const Node& node, const std::vector<DeviceName>& devices) {
  Indices out = Select(devices, [&](const DeviceName& d) { return KernelRegistry::Global().HasFor(node, d.type); });
  if (out.empty())
    Fail(Code::kUnimplemented, node.Describe(), ": no device has a kernel for ", node.op(), " (",
         DTypeName(KernelDType(node)),
         "); devices offered: ", ListDevices(Matching({}, devices), devices));
  return out;
}

// The group's state while its members' requests narrow it down.
struct Narrowing {
  Indices candidates;                // devices still allowed
  std::vector<std::string> applied;  // "Assign 'a' requests '/job:ps'"
  std::vector<std::string> notes;    // soft placement decisions
};

// Soft placement: keep the request's job/replica/task, drop the device part;
// when that matches nothing usable either, drop the request.
void RelaxRequest(const Node& node, DeviceName request, const std::vector<DeviceName>& devices,
                  Narrowing& state) {
  request.type.clear();
  request.index.reset();
  Indices relaxed = Intersect(Matching(request, devices), state.candidates);
  std::string note = StrCat("soft placement: no device with a kernel matches '",
                            node.requested_device(), "' requested by ", node.Describe());
  if (relaxed.empty() || request.ToString().empty()) {
    state.notes.push_back(note + "; request dropped");
    return;
  }
  state.candidates = relaxed;
  state.notes.push_back(note + "; relaxed to '" + request.ToString() + "'");
}

void ApplyRequest(const Node& node, const Indices& with_kernel,
                  const std::vector<DeviceName>& devices, bool soft, const std::string& group_words,
                  Narrowing& state) {
  DeviceName request = ParseRequest(node);
  Indices matching = Matching(request, devices);
  Indices usable = Intersect(matching, with_kernel);
  if (usable.empty() && soft) return RelaxRequest(node, request, devices, state);
  std::string in_group = group_words.empty() ? "" : "; it is in the " + group_words;
  if (matching.empty())
    Fail(Code::kInvalidArgument, node.Describe(), " requests device '", node.requested_device(),
         "' but no device matches it; devices: ", ListDevices(Matching({}, devices), devices),
         in_group);
  if (usable.empty())
    Fail(Code::kInvalidArgument, node.Describe(), " requests device '", node.requested_device(),
         "' but ", node.op(), " has no kernel for ", DTypeName(KernelDType(node)),
         " there; devices with a kernel: ", ListDevices(with_kernel, devices), in_group,
         " (soft placement would fall back to one of those)");
  Indices next = Intersect(state.candidates, usable);
  if (next.empty())
    Fail(Code::kInvalidArgument, node.Describe(), " requests device '", node.requested_device(),
         "' but it is in the ", group_words, ", which must share one device, and ",
         state.applied.empty() ? "the kernels of the group's ops" : Join(state.applied, " and "),
         " rule that out; devices left for the group: ", ListDevices(state.candidates, devices));
  state.candidates = next;
  state.applied.push_back(StrCat(node.Describe(), " requests '", node.requested_device(), "'"));
}

// A fallback device keeps a group only when no other candidate remains; the
// reason says so unless a request chose it.
void PreferNonFallback(const Indices& fallback, const std::vector<DeviceName>& devices,
                       Narrowing& state) {
  Indices preferred = Difference(state.candidates, fallback);
  if (!preferred.empty()) {
    state.candidates = preferred;
  } else if (state.applied.empty() && state.notes.empty()) {
    state.notes.push_back("soft placement: no kernel on " +
                          ListDevices(Difference(Matching({}, devices), fallback), devices) +
                          ", so the fallback device");
  }
}

std::string Explain(const Narrowing& state, const std::string& group_words,
                    const Indices& all_kernels, size_t num_devices) {
  std::vector<std::string> parts;
  if (!state.applied.empty()) parts.push_back(Join(state.applied, ", "));
  if (!group_words.empty()) parts.push_back("in the " + group_words);
  if (all_kernels.size() < num_devices) parts.push_back("kernels only on some devices");
  for (const std::string& note : state.notes) parts.push_back(note);
  return Join(parts, "; ");
}

}  // namespace

GroupConstraint ConstrainGroup(const ColocationGroups& groups, int group,
                               const std::vector<DeviceName>& devices, bool allow_soft_placement,
                               const std::vector<int>& fallback) {
  const std::vector<Node*>& members = groups.Members(group);
  std::string group_words = GroupWords(groups, group);
  Narrowing state{Matching({}, devices), {}, {}};
  std::vector<Indices> kernels;
  for (const Node* m : members) {
    kernels.push_back(WithKernel(*m, devices));
    state.candidates = Intersect(state.candidates, kernels.back());
  }
  if (state.candidates.empty()) {
    std::vector<std::string> each;
    for (size_t i = 0; i < members.size(); ++i)
      each.push_back(members[i]->Describe() + " on " + ListDevices(kernels[i], devices));
    Fail(Code::kInvalidArgument, "the ", group_words,
         " must share one device but no device has a "
         "kernel for all its ops; kernels: ",
         Join(each, "; "));
  }
  Indices all_kernels = state.candidates;
  for (size_t i = 0; i < members.size(); ++i)
    if (!members[i]->requested_device().empty())
      ApplyRequest(*members[i], kernels[i], devices, allow_soft_placement, group_words, state);
  if (!fallback.empty()) PreferNonFallback(fallback, devices, state);
  return {state.candidates, Explain(state, group_words, all_kernels, devices.size())};
}

}  // namespace dflow
