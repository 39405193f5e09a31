-- Argo CD health check for ergon.dev/Workspace (resource.customizations.health.ergon.dev_Workspace).
-- Ergon has no Workspace controller yet, so a Workspace has no status: it is Healthy as soon as
-- it exists, as kstatus sees it Current. Once a controller writes status.observedGeneration,
-- the phase decides.
hs = {status = "Healthy", message = "Ergon writes no status for Workspaces yet"}
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
if obj.status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for Ergon to apply the latest generation"
  return hs
end
local phase = obj.status.phase
hs.message = "Workspace " .. (phase or "Pending")
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.message ~= nil and c.message ~= "" then
      hs.message = c.message
    end
  end
end
if phase == "Running" then
  hs.status = "Healthy"
elseif phase == "Idle" then
  hs.status = "Suspended"
elseif phase == "Failed" then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
return hs
