import {Constructor, Context, CoreTags} from '@loopback/core';

/** The application's controller classes by name, as `x-controller-name` names them. */
export function controllerClasses(app: Context): Map<string, Constructor<{}>> {
  const controllers = new Map<string, Constructor<{}>>();
  for (const binding of app.findByTag(CoreTags.CONTROLLER)) {
    const ctor = binding.valueConstructor;
    if (ctor) controllers.set(ctor.name, ctor);
  }
  return controllers;
}
