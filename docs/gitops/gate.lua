-- Argo CD health check for ergon.dev/Gate (resource.customizations.health.ergon.dev_Gate).
-- A Gate nobody has decided is Suspended; once decided it is Healthy, whatever the decision
-- (the Run it pauses tells what the decision meant), and so is a Gate closed because its Run
-- ended first.
hs = {status = "Suspended", message = "Waiting for a decision"}
if obj.status == nil or obj.status.phase == nil or obj.status.phase == "Pending" then
  if obj.spec ~= nil and obj.spec.message ~= nil then
    hs.message = "Waiting for a decision: " .. obj.spec.message
  end
  return hs
end
hs.status = "Healthy"
hs.message = obj.status.phase
if obj.status.phase == "Closed" then
  hs.message = "Closed: its Run ended before anyone decided"
elseif obj.status.decidedBy ~= nil then
  hs.message = obj.status.phase .. " by " .. obj.status.decidedBy
end
return hs
