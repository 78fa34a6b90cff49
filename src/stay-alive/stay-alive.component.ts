import {Component, createBindingFromClass} from '@loopback/core';
import {StayAliveBindings} from '../keys';
import {StayAliveObserver} from './stay-alive.observer';

/** The stay-alive role (APP_MODE=stay-alive). */
export class StayAliveComponent implements Component {
  bindings = [
    createBindingFromClass(StayAliveObserver, {
      key: StayAliveBindings.OBSERVER,
    }),
  ];
}
